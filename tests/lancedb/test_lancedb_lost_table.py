"""A deleted memories table is rebuilt from the journal by itself, and status says so (14.9).

Real LanceDB: the table's directory is removed under a running manager (whose handle is
cached) and before a new one opens; recall must find the memories again without
``ltm rebuild``.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from lancedb_helpers import Build
from memwell_lancedb.manager import LanceMemoryManager
from memwell_lancedb.store import MEMORIES_TABLE

TEXTS = ("I prefer dark mode in every editor", "The billing service is written in Rust")


def store_all(memory: LanceMemoryManager) -> set[str]:
    return {memory.memories.store(text).memory.id for text in TEXTS}


def lose_table(memory: LanceMemoryManager) -> None:
    shutil.rmtree(Path(memory.uri) / f"{MEMORIES_TABLE}.lance")


def test_a_running_manager_rebuilds_a_deleted_table(build: Build, workspace: Path) -> None:
    memory = build(workspace)
    ids = store_all(memory)
    assert memory.status().custom["memories"].get("rebuilt_from_journal") is None
    lose_table(memory)
    hits = memory.memories.recall("dark mode editor")
    assert hits and hits[0].memory.text == TEXTS[0]
    assert {m.id for m in memory.memories.list()} == ids
    recovery = memory.status().custom["memories"]["rebuilt_from_journal"]
    assert recovery["memories"] == 2 and recovery["reason"] == "the memories table was missing"
    assert recovery["journal"] == str(memory.journal.path if memory.journal else None)


def test_a_new_manager_rebuilds_a_deleted_table(build: Build, workspace: Path) -> None:
    first = build(workspace)
    ids = store_all(first)
    first.close()
    lose_table(first)
    second = build(workspace)
    assert {h.memory.id for h in second.memories.recall("Rust billing service", limit=5)} <= ids
    assert second.memories.recall("billing Rust")[0].memory.text == TEXTS[1]
    assert second.status().custom["memories"]["count"] == 2
    created = second.memories.store("Alice's phone number is +420123456789")
    assert created.action == "created"
    assert len(second.memories.list()) == 3
    assert second.status().custom["memories"]["rebuilt_from_journal"]["memories"] == 2


def test_no_journal_means_nothing_to_rebuild(build: Build, workspace: Path) -> None:
    memory = build(workspace, lance={"journal": False})
    store_all(memory)
    lose_table(memory)
    assert memory.memories.recall("dark mode editor") == []
    assert "rebuilt_from_journal" not in memory.status().custom["memories"]


def test_queries_are_cut_to_max_chars(build: Build, workspace: Path) -> None:
    (workspace / "MEMORY.md").write_text("# Memory\n\nZanzibar is the billing codename.\n")
    memory = build(workspace, query={"max_chars": 32})
    memory.sync()
    long_query = "Zanzibar billing codename " + "unrelated filler " * 50_000
    assert memory.status().query_max_chars == 32
    assert [r.path for r in memory.search(long_query, min_score=0.0)] == [
        r.path for r in memory.search(long_query[:32], min_score=0.0)
    ]
