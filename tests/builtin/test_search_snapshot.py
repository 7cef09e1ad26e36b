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
