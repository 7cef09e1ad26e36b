"""Conformance for the core writer on a backend: every write is searchable when it returns.

Subclass with the same ``memory_factory`` fixture as
:class:`~memwell.testing.conformance.BackendConformance`::

    class TestMyBackendWrites(WriterConformance):
        @pytest.fixture
        def memory_factory(self):
            return lambda workspace: MyManager(workspace)

Each test writes through :class:`~memwell.writing.MemoryWriter` and searches right away, with
no other sync in between: the writer's own sync must bring the index up to date.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from memwell.contract.manager import MemorySearchManager
from memwell.testing.conformance import MemoryFixtures
from memwell.writing import MemoryWriter


class WriterConformance(MemoryFixtures):
    """Writes through the core writer are visible to the backend's next search."""

    @pytest.fixture
    def writer(self, memory: MemorySearchManager, workspace: Path) -> MemoryWriter:
        return MemoryWriter(memory, workspace)

    def _paths(self, memory: MemorySearchManager, query: str) -> list[str]:
        return [hit.path for hit in memory.search(query, max_results=5, min_score=0.0)]

    def test_appended_note_is_found_at_once(
        self, memory: MemorySearchManager, writer: MemoryWriter
    ) -> None:
        result = writer.append("The quokkaplan rollout starts after the freeze.")
        assert result.indexed, result.index_error
        assert result.path == writer.daily_path()
        assert self._paths(memory, "quokkaplan rollout")[:1] == [result.path]
        text = memory.read_file(result.path, from_line=result.start_line, lines=1).text
        assert text == "The quokkaplan rollout starts after the freeze."

    def test_note_under_a_heading_is_found(
        self, memory: MemorySearchManager, writer: MemoryWriter
    ) -> None:
        result = writer.append("Bob drinks rooibostea only.", heading="Preferences")
        assert result.path == "MEMORY.md" and result.heading_created
        assert self._paths(memory, "rooibostea")[:1] == ["MEMORY.md"]

    def test_created_topic_is_found(
        self, memory: MemorySearchManager, writer: MemoryWriter
    ) -> None:
        result = writer.create("memory/vendors.md", "# Vendors\n\nInvoices go to Blorptech.\n")
        assert result.created
        assert self._paths(memory, "Blorptech invoices")[:1] == ["memory/vendors.md"]

    def test_replaced_passage_is_found_and_the_old_one_gone(
        self, memory: MemorySearchManager, writer: MemoryWriter
    ) -> None:
        writer.replace("memory/2026-01-02.md", "Zanzibar", "Xylophonix")
        assert self._paths(memory, "Xylophonix")[:1] == ["memory/2026-01-02.md"]
        stale = memory.search("Zanzibar", max_results=10, min_score=0.0)
        assert not any("Zanzibar" in hit.snippet for hit in stale)
