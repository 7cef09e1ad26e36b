"""The core backend conformance suite, with vectors (hash provider) and keyword-only."""

from __future__ import annotations

from pathlib import Path

import pytest
from lancedb_helpers import Build
from memwell.contract.manager import MemorySearchManager
from memwell.testing.conformance import BackendConformance, MemoryFactory


class TestLanceHybrid(BackendConformance):
    backend_name = "lancedb"

    @pytest.fixture
    def memory_factory(self, build: Build) -> MemoryFactory:
        def make(workspace: Path) -> MemorySearchManager:
            return build(workspace)

        return make


class TestLanceKeywordOnly(BackendConformance):
    backend_name = "lancedb"

    @pytest.fixture
    def memory_factory(self, build: Build) -> MemoryFactory:
        def make(workspace: Path) -> MemorySearchManager:
            return build(workspace, provider="none")

        return make
