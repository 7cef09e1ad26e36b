"""The core backend conformance suite against the real server, hybrid and keyword-only."""

from __future__ import annotations

from pathlib import Path

import pytest
from memwell.contract.manager import MemorySearchManager
from memwell.testing.conformance import BackendConformance, MemoryFactory
from pg_helpers import Build


class TestPostgresHybrid(BackendConformance):
    backend_name = "postgres"

    @pytest.fixture
    def memory_factory(self, build: Build) -> MemoryFactory:
        def make(workspace: Path) -> MemorySearchManager:
            return build(workspace)

        return make


class TestPostgresKeywordOnly(BackendConformance):
    backend_name = "postgres"

    @pytest.fixture
    def memory_factory(self, build: Build) -> MemoryFactory:
        def make(workspace: Path) -> MemorySearchManager:
            return build(workspace, provider="none")

        return make
