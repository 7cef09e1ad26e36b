"""Chunk ids are unique by construction, and each FTS row stays with its chunk (issue 38 item 1).

A note with a long run of one character or word chunks into several identical pieces of one
line. Their ids used to collide; ``INSERT OR REPLACE`` then dropped a chunk but not its FTS
row, and every later write failed with ``IntegrityError`` until ``index --force``.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner
from memwell.cli.main import cli
from memwell.runtime import factory
from memwell_sqlite.store import ChunkRow, FileState, IndexStore

RUNS = {
    "one character": "x" * 12000,
    "one symbol": "=" * 5000,
    "one word": "ab " * 3000,
    "base64 image": "![pasted](data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAB" + "A" * 9000 + ")",
}


@pytest.fixture(autouse=True)
def _isolated(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[None]:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    for name in list(os.environ):
        if name.startswith("MEMWELL_") and name != "MEMWELL_LOAD_PLUGINS":
            monkeypatch.delenv(name)
    yield
    factory.close_all()


def invoke(ws: Path, *args: str) -> tuple[int, str]:
    result = CliRunner().invoke(cli, ["--provider", "none", "-w", str(ws), *args])
    return result.exit_code, result.output


@pytest.mark.parametrize("note", RUNS.values(), ids=RUNS.keys())
def test_a_long_run_then_any_write_then_search(tmp_path: Path, note: str) -> None:
    """The issue's repro: ``memwell write <run>``, a second write, ``memwell search``."""
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "MEMORY.md").write_text("# Memory\n", encoding="utf-8")
    code, out = invoke(ws, "write", note)
    assert code == 0, out
    code, out = invoke(ws, "write", "The zeppelin hangar opens on Tuesday.")
    assert code == 0 and "not indexed" not in out, out
    code, out = invoke(ws, "search", "zeppelin hangar")
    assert code == 0 and "zeppelin" in out, out
    code, out = invoke(ws, "index")
    assert code == 0, out


def _rows(store: IndexStore, table: str) -> set[int]:
    return {r[0] for r in store.conn.execute(f"SELECT rowid FROM {table}")}


def test_stray_fts_and_vector_rows_left_by_an_older_version_are_overwritten(
    tmp_path: Path,
) -> None:
    """An index the old code damaged holds FTS and vector rows of a replaced chunk at the
    rowid the next chunk takes: that chunk's write replaces them instead of failing."""
    store = IndexStore(tmp_path / "index.sqlite")
    assert store.driver.vec_loaded
    store.ensure_vec_table(2)
    state = FileState("h", 1, 1)

    def rows(path: str, *texts: str) -> list[ChunkRow]:
        unit = np.asarray([0.6, 0.8], dtype=np.float32)
        return [ChunkRow(f"{path}#{n}", n, n, "h", t, unit) for n, t in enumerate(texts, 1)]

    with store.conn:
        store.replace_file("a.md", "memory", state, rows("a.md", "one", "two"), "m")
    # What INSERT OR REPLACE left behind: the last chunk gone, its FTS and vector rows not.
    with store.conn:
        store.conn.execute("DELETE FROM chunks WHERE rowid = (SELECT MAX(rowid) FROM chunks)")
    assert _rows(store, "chunks_fts") - _rows(store, "chunks")
    assert _rows(store, "chunks_vec") - _rows(store, "chunks")
    with store.conn:
        store.replace_file("b.md", "memory", state, rows("b.md", "three", "four"), "m")
    assert _rows(store, "chunks_fts") == _rows(store, "chunks") == _rows(store, "chunks_vec")
    texts = dict(store.conn.execute("SELECT rowid, text FROM chunks_fts"))
    assert sorted(texts.values()) == ["four", "one", "three"]
    store.close()


def test_a_duplicate_id_fails_the_write_and_keeps_the_index_whole(tmp_path: Path) -> None:
    """Ids collide only through a bug; then the whole file's write is refused and rolled
    back (no chunk is replaced behind its FTS row's back)."""
    store = IndexStore(tmp_path / "index.sqlite", vector_enabled=False)
    state = FileState("h", 1, 1)
    row = ChunkRow("same", 1, 1, "h", "kept text", None)
    with store.conn:
        store.replace_file("a.md", "memory", state, [row], "fts-only")
    with pytest.raises(Exception, match="constraint"), store.conn:
        store.replace_file("b.md", "memory", state, [row], "fts-only")
    assert _rows(store, "chunks_fts") == _rows(store, "chunks") and len(_rows(store, "chunks")) == 1
    store.close()
