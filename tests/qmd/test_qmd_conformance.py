"""memwell's backend conformance suite against the real qmd (BM25 ``search`` mode).

The manager is built directly, not through ``open_memory``: a FallbackMemoryManager would
hide a failing qmd behind builtin results.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from memwell.contract.manager import MemorySearchManager
from memwell.testing.conformance import BackendConformance, MemoryFactory
from memwell_qmd.manager import QmdMemoryManager
from qmd_helpers import QUIET


class TestQmdConformance(BackendConformance):
    backend_name = "qmd"
    concurrency_rounds = 4  # each sync runs the qmd CLI (about 2 s a round)

    @pytest.fixture
    def memory_factory(
        self, make_manager: Callable[..., QmdMemoryManager], real_qmd: str
    ) -> MemoryFactory:
        def make(workspace: Path) -> MemorySearchManager:
            return make_manager(workspace, real_qmd, **QUIET)

        return make
