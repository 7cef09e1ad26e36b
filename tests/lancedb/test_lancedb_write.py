"""The writer conformance suite on LanceDB: a write is searchable when it returns."""

from __future__ import annotations

import pytest
from lancedb_helpers import Build
from memwell.testing.conformance import MemoryFactory
from memwell.testing.write_conformance import WriterConformance


class TestLanceHybridWrites(WriterConformance):
    @pytest.fixture
    def memory_factory(self, build: Build) -> MemoryFactory:
        return lambda workspace: build(workspace)


class TestLanceKeywordOnlyWrites(WriterConformance):
    @pytest.fixture
    def memory_factory(self, build: Build) -> MemoryFactory:
        return lambda workspace: build(workspace, provider="none")
