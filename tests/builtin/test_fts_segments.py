"""FTS segments: a bulk write, and any write to a small index, is merged into one b-tree
afterwards; a small sync to a large index is left to FTS5."""

from __future__ import annotations

from contextlib import closing
from pathlib import Path

import memwell_sqlite.indexer as indexer
import pytest
from conftest import OpenFn
from memwell_sqlite.driver import sqlite_module
from memwell_sqlite.store import IndexStore


def _workspace(root: Path, files: int) -> Path:
    for i in range(files):
        path = root / "memory" / f"note-{i:03d}.md"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"# Note {i}\n\nThe word{i} service listens on port {20000 + i}.\n")
    return root


def _merged(db: str) -> bool:
    """Whether FTS5's ``optimize`` would leave the FTS index as it is (one segment)."""
    with closing(sqlite_module().connect(db)) as conn:
        query = "SELECT count(*), sum(length(block)) FROM chunks_fts_data"
        before = conn.execute(query).fetchone()
        conn.execute("BEGIN")
        conn.execute("INSERT INTO chunks_fts (chunks_fts) VALUES ('optimize')")
        after = conn.execute(query).fetchone()
        conn.execute("ROLLBACK")
    return bool(before == after)


@pytest.mark.parametrize(
    ("min_chunks", "merged"), [(indexer.MERGE_MIN_CHUNKS, True), (10**9, False)]
)
def test_a_first_index_of_many_transactions_is_merged(
    open_ws: OpenFn,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    min_chunks: int,
    merged: bool,
) -> None:
    # Ten chunks a transaction: the index is written as about 30 FTS segments. The control
    # case (no merge, and no index counts as small) shows that the check sees them.
    monkeypatch.setattr(indexer, "FTS_ONLY_CHUNKS_PER_TXN", 10)
    monkeypatch.setattr(indexer, "MERGE_MIN_CHUNKS", min_chunks)
    monkeypatch.setattr(indexer, "SMALL_INDEX_CHUNKS", 0)
    memory = open_ws(_workspace(tmp_path / "ws", 300), provider="none")
    memory.sync()
    db = memory.status().db_path
    assert db is not None
    assert _merged(db) is merged
    assert [h.path for h in memory.search("word123 port", min_score=0.0)][:1] == [
        "memory/note-123.md"
    ]


@pytest.mark.parametrize(("small_index", "merged"), [(300, True), (298, False)])
def test_an_edit_is_merged_in_a_small_index_and_left_to_fts5_in_a_large_one(
    open_ws: OpenFn,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    small_index: int,
    merged: bool,
) -> None:
    # The index holds 300 chunks, then 299: small for a bound of 300 chunks, large for 298.
    monkeypatch.setattr(indexer, "SMALL_INDEX_CHUNKS", small_index)
    ws = _workspace(tmp_path / "ws", 300)
    memory = open_ws(ws, provider="none")
    calls: list[int] = []
    original = IndexStore.merge_keyword_index

    def spy(store: IndexStore) -> None:
        calls.append(store.chunk_count())
        original(store)

    monkeypatch.setattr(IndexStore, "merge_keyword_index", spy)
    memory.sync()
    assert calls == [300], "the first index is merged once"
    memory.sync()
    assert calls == [300], "a sync that wrote nothing merges nothing"
    for i in (7, 8):  # two edits, two syncs: at least two segments beside the first one
        (ws / "memory" / f"note-{i:03d}.md").write_text(f"# Note {i}\n\nThe otter{i} moved.\n")
        memory.sync()
    assert calls == [300, 300, 300] if merged else [300]
    db = memory.status().db_path
    assert db is not None
    assert _merged(db) is merged
    assert [h.path for h in memory.search("otter7", min_score=0.0)] == ["memory/note-007.md"]
    (ws / "memory" / "note-009.md").unlink()
    memory.sync()
    assert len(calls) == (4 if merged else 1), "a removal writes to the FTS index too"


def test_keyword_only_transactions_hold_up_to_1024_files() -> None:
    pending = [
        indexer.PendingFile(f"f{i}.md", "memory", indexer.FileState("h", 0, 0), [])
        for i in range(2500)
    ]
    sizes = [
        len(g)
        for g in indexer._groups(
            pending, indexer.FTS_ONLY_CHUNKS_PER_TXN, indexer.FTS_ONLY_FILES_PER_TXN
        )
    ]
    assert sizes == [1024, 1024, 452]
    assert [len(g) for g in indexer._groups(pending[:300], 64, 128)] == [128, 128, 44]
