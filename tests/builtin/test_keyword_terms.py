"""Keyword-boost terms are computed when a chunk is indexed, never per candidate at search time
(issue 22: re-tokenising every candidate was most of a warm keyword search)."""

from __future__ import annotations

from contextlib import closing
from pathlib import Path

import memwell.retrieval.fts_query as fts_query
import pytest
from conftest import OpenFn
from memwell.retrieval.fts_query import chunk_terms
from memwell.testing.conformance import write_workspace
from memwell_sqlite.driver import sqlite_module
from memwell_sqlite.store import SCHEMA_VERSION, IndexStore

NOTES = {
    "memory/harbour.md": "# Harbour\n\nThe harbour crane listens on port 20417.\n",
    "memory/北京.md": "# 北京\n\n我爱北京天安门，港口起重机在北京。\n",
    "memory/orchard.md": "# Orchard\n\nApples ripen in the orchard in autumn.\n",
}


def _db(memory: object) -> Path:
    db = memory.status().db_path  # type: ignore[attr-defined]
    assert db is not None
    return Path(db)


def test_each_chunk_stores_its_terms_at_index_time(open_ws: OpenFn, tmp_path: Path) -> None:
    memory = open_ws(write_workspace(tmp_path / "ws", NOTES), provider="none")
    memory.sync()
    with closing(sqlite_module().connect(f"file:{_db(memory)}?mode=ro", uri=True)) as conn:
        rows = conn.execute("SELECT text, terms FROM chunks").fetchall()
    assert rows
    assert all(terms == chunk_terms(text) for text, terms in rows)


@pytest.mark.parametrize("query", ["harbour crane port", "北京起重机"])
def test_keyword_search_never_tokenises_a_candidate(
    open_ws: OpenFn, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, query: str
) -> None:
    ws = write_workspace(tmp_path / "ws", NOTES)
    memory = open_ws(ws, provider="none", cache={"recall": {"enabled": False}})
    memory.sync()
    expected = [(r.path, r.score) for r in memory.search(query, min_score=0.0)]
    assert expected

    def refuse(text: str) -> str:
        raise AssertionError(f"a candidate was tokenised at search time: {text[:40]!r}")

    monkeypatch.setattr(fts_query, "chunk_terms", refuse)
    assert [(r.path, r.score) for r in memory.search(query, min_score=0.0)] == expected


def test_an_index_without_stored_terms_is_searched_then_rebuilt(
    open_ws: OpenFn, tmp_path: Path
) -> None:
    """A schema-1 index (no ``terms`` column) still answers, and the next sync rebuilds it."""
    ws = write_workspace(tmp_path / "ws", NOTES)
    memory = open_ws(ws, provider="none", cache={"recall": {"enabled": False}})
    memory.sync()
    expected = [(r.path, r.score) for r in memory.search("harbour crane", min_score=0.0)]
    db = _db(memory)
    memory.close()
    store = IndexStore(db)
    with store.conn:
        store.conn.execute("ALTER TABLE chunks DROP COLUMN terms")
        meta = store.read_meta()
        assert meta is not None and meta["schema_version"] == SCHEMA_VERSION
        store.conn.execute("UPDATE meta SET value = json_set(value, '$.schema_version', 1)")
    store.close()
    assert not IndexStore(db, read_only=True).has_terms

    old = open_ws(ws, provider="none", cache={"recall": {"enabled": False}})
    assert [(r.path, r.score) for r in old.search("harbour crane", min_score=0.0)] == expected
    old.sync()
    assert IndexStore(_db(old), read_only=True).has_terms
    assert [(r.path, r.score) for r in old.search("harbour crane", min_score=0.0)] == expected
