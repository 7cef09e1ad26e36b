"""The writer conformance suite on the builtin backend, hybrid and keyword-only."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from memwell.contract.manager import MemorySearchManager
from memwell.testing.conformance import MemoryFactory
from memwell.testing.write_conformance import WriterConformance

OpenFn = Callable[..., MemorySearchManager]


class TestBuiltinHybridWrites(WriterConformance):
    @pytest.fixture
    def memory_factory(self, open_ws: OpenFn) -> MemoryFactory:
        return lambda workspace: open_ws(workspace)


class TestBuiltinKeywordOnlyWrites(WriterConformance):
    @pytest.fixture
    def memory_factory(self, open_ws: OpenFn) -> MemoryFactory:
        return lambda workspace: open_ws(workspace, provider="none")
