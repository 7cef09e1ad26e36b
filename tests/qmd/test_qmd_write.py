"""The writer conformance suite against the real qmd: ``qmd update`` runs before a write returns."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from memwell.testing.conformance import MemoryFactory
from memwell.testing.write_conformance import WriterConformance
from memwell_qmd.manager import QmdMemoryManager
from qmd_helpers import QUIET


class TestQmdWrites(WriterConformance):
    @pytest.fixture
    def memory_factory(
        self, make_manager: Callable[..., QmdMemoryManager], real_qmd: str
    ) -> MemoryFactory:
        return lambda workspace: make_manager(workspace, real_qmd, **QUIET)
