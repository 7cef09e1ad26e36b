"""A search checks the index snapshot's statistics once, and the next search sees a commit."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from memwell.testing.conformance import write_workspace

OpenFn = Callable[..., Any]

FILES = {
    f"memory/note-{i}.md": f"# Note {i}\n\nThe otter{i} crossed the river.\n" for i in range(6)
}


@pytest.mark.parametrize("keyword_only", [True, False])
def test_a_search_reads_data_version_once_and_the_next_sees_another_connection_commit(
    open_ws: OpenFn, tmp_path: Path, keyword_only: bool
) -> None:
    memory: Any = open_ws(
        write_workspace(tmp_path / "ws", FILES),
        cache={"recall": {"enabled": False}},  # it reads data_version too, for its own key
        **({"provider": "none"} if keyword_only else {}),  # else the tests' hash provider
    )
    memory.sync()
    memory.search("otter1 river", min_score=0.0)  # opens the reader, fills the statistics
    with memory.files.lock:
        store = memory.files.reader_store()
    statements: list[str] = []
    store.conn.set_trace_callback(statements.append)
    try:
        hits = memory.search("otter2 river", min_score=0.0)
    finally:
        store.conn.set_trace_callback(None)
    assert hits[0].path == "memory/note-2.md"
    assert sum(s.strip().upper() == "PRAGMA DATA_VERSION" for s in statements) == 1
    # Another connection adds a chunk behind the reader's back: the next search's statistics
    # are those of the new snapshot (every term is in more than half of the chunks again).
    from memwell_sqlite.driver import sqlite_module

    assert store.chunk_total() == len(FILES)
    writer = sqlite_module().connect(str(store.path))
    try:
        with writer:
            writer.execute(
                "INSERT INTO chunks (id, path, source, start_line, end_line, hash, model, text, "
                "updated_at) SELECT id || '-copy', path, source, start_line, end_line, hash, "
                "model, text, updated_at FROM chunks LIMIT 1"
            )
    finally:
        writer.close()
    memory.search("otter3 river", min_score=0.0)
    assert store.chunk_total() == len(FILES) + 1


def _reads_of_chunk_rows(store: Any, search: Callable[[], Any]) -> tuple[Any, int]:
    statements: list[str] = []
    store.conn.set_trace_callback(statements.append)
    try:
        result = search()
    finally:
        store.conn.set_trace_callback(None)
    return result, sum("FROM chunks WHERE rowid IN" in s for s in statements)


def test_a_chunk_found_again_in_the_same_snapshot_is_not_read_again_and_an_edit_is_seen(
    open_ws: OpenFn, tmp_path: Path
) -> None:
    ws = write_workspace(tmp_path / "ws", FILES)
    memory: Any = open_ws(ws, provider="none", cache={"recall": {"enabled": False}})
    memory.sync()
    with memory.files.lock:
        store = memory.files.reader_store()
    # The note whose chunk has the highest rowid: rewritten, its new chunk takes the same rowid.
    last = store.conn.execute("SELECT path FROM chunks ORDER BY rowid DESC LIMIT 1").fetchone()[0]
    word = f"otter{last[len('memory/note-') : -len('.md')]}"
    hits, reads = _reads_of_chunk_rows(store, lambda: memory.search(word, min_score=0.0))
    assert [h.path for h in hits] == [last] and reads == 1
    hits, reads = _reads_of_chunk_rows(store, lambda: memory.search(word, min_score=0.0))
    assert [h.path for h in hits] == [last] and reads == 0
    # A sync rewrites the note (another connection commits): its new text is read.
    (ws / last).write_text(f"# Note\n\nThe {word} swam to the sea.\n")
    memory.sync()
    with memory.files.lock:
        assert memory.files.reader_store() is store, "the same reader, a newer snapshot"
    hits, reads = _reads_of_chunk_rows(store, lambda: memory.search(word, min_score=0.0))
    assert "swam to the sea" in hits[0].snippet and reads == 1


def test_a_store_forgets_its_decoded_rows_when_it_writes_chunks(tmp_path: Path) -> None:
    from memwell.retrieval.fts_query import build_fts_query
    from memwell_sqlite.store import ChunkRow, FileState, IndexStore

    store = IndexStore(tmp_path / "index.sqlite")

    def write(text: str) -> None:
        with store.conn:
            row = ChunkRow(id="c1", start_line=1, end_line=1, hash=text, text=text, embedding=None)
            store.replace_file("memory/a.md", "memory", FileState(text, 0, 0), [row], "fts-only")

    query = build_fts_query("heron")
    assert query is not None
    write("a grey heron waits")
    assert [c.text for c in store.keyword_search(query, 5, ["memory"])] == ["a grey heron waits"]
    write("a white heron flies")  # its own commit does not move its data_version
    assert [c.text for c in store.keyword_search(query, 5, ["memory"])] == ["a white heron flies"]
    store.close()


def test_the_decoded_rows_are_bounded(
    open_ws: OpenFn, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import memwell_sqlite.store as store_module

    monkeypatch.setattr(store_module, "ROW_CACHE_CHARS", 1)  # any row fills it
    memory: Any = open_ws(
        write_workspace(tmp_path / "ws", FILES),
        provider="none",
        cache={"recall": {"enabled": False}},
    )
    memory.sync()
    with memory.files.lock:
        store = memory.files.reader_store()
    memory.search("otter1", min_score=0.0)
    memory.search("otter2", min_score=0.0)  # the rows of the first search are dropped ...
    hits, reads = _reads_of_chunk_rows(store, lambda: memory.search("otter1", min_score=0.0))
    assert [h.path for h in hits] == ["memory/note-1.md"] and reads == 1  # ... and read again


def test_a_search_over_the_rows_budget_keeps_its_cached_hits(
    open_ws: OpenFn, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A search whose hits are partly cached, once the budget is spent, returns all of them
    (the cache was once reset under it, and its cached hits vanished from its results)."""
    import memwell_sqlite.store as store_module

    monkeypatch.setattr(store_module, "ROW_CACHE_CHARS", 1)  # any row fills it
    workspace = write_workspace(tmp_path / "ws", FILES)
    memory: Any = open_ws(workspace, provider="none", cache={"recall": {"enabled": False}})
    memory.sync()
    every = sorted(FILES)
    assert [h.path for h in memory.search("otter1", min_score=0.0)] == ["memory/note-1.md"]
    hits = memory.search("crossed the river", max_results=10, min_score=0.0)
    assert sorted(h.path for h in hits) == every  # note-1's row was cached, the rest not
    again = memory.search("crossed the river", max_results=10, min_score=0.0)
    assert [(h.path, h.score) for h in again] == [(h.path, h.score) for h in hits]
