"""The recall checks of the conformance suite (batch search, injection budget, cache
invalidation on write) against the fake qmd, so they run where the real qmd is missing."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from memwell.contract.manager import MemorySearchManager
from memwell.testing.conformance import BackendConformance, MemoryFactory
from memwell_qmd.manager import QmdMemoryManager
from qmd_helpers import QUIET


class TestFakeQmdRecall:
    @pytest.fixture
    def memory_factory(
        self, make_manager: Callable[..., QmdMemoryManager], fake_qmd: Path
    ) -> MemoryFactory:
        def make(workspace: Path) -> MemorySearchManager:
            return make_manager(workspace, str(fake_qmd), **QUIET)

        return make

    memory = BackendConformance.memory
    test_search_many_equals_single_searches = (
        BackendConformance.test_search_many_equals_single_searches
    )
    test_tool_payload_fits_the_injection_budget = (
        BackendConformance.test_tool_payload_fits_the_injection_budget
    )
    test_recall_cache_never_hides_a_written_note = (
        BackendConformance.test_recall_cache_never_hides_a_written_note
    )
