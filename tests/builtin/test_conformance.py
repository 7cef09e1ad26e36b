from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from memwell.contract.manager import MemorySearchManager
from memwell.testing.conformance import BackendConformance, MemoryFactory

OpenFn = Callable[..., MemorySearchManager]


class TestBuiltinHybrid(BackendConformance):
    backend_name = "builtin"

    @pytest.fixture
    def memory_factory(self, open_ws: OpenFn) -> MemoryFactory:
        def make(workspace: Path) -> MemorySearchManager:
            return open_ws(workspace)

        return make


class TestBuiltinKeywordOnly(BackendConformance):
    backend_name = "builtin"

    @pytest.fixture
    def memory_factory(self, open_ws: OpenFn) -> MemoryFactory:
        def make(workspace: Path) -> MemorySearchManager:
            return open_ws(workspace, provider="none")

        return make


class TestBuiltinSqliteVecEngine(BackendConformance):
    backend_name = "builtin"

    @pytest.fixture
    def memory_factory(self, open_ws: OpenFn) -> MemoryFactory:
        def make(workspace: Path) -> MemorySearchManager:
            return open_ws(workspace, backends={"builtin": {"vector_engine": "sqlite-vec"}})

        return make
