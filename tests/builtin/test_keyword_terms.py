"""Keyword-boost terms are computed when a chunk is indexed, never per candidate at search time
(issue 22: re-tokenising every candidate was most of a warm keyword search)."""

from __future__ import annotations

from contextlib import closing
from pathlib import Path

import memwell.retrieval.fts_query as fts_query
import pytest
from conftest import OpenFn
from memwell.retrieval.fts_query import build_fts_query, chunk_terms
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
        rows = conn.execute("SELECT text, terms, term_count FROM chunks").fetchall()
    assert rows
    assert all((words, count) == chunk_terms(text) for text, words, count in rows)


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


# Schema 1 had no terms; schema 3 stored every term in ``terms`` and had no ``term_count``.
OLD_SCHEMAS = {
    1: ["ALTER TABLE chunks DROP COLUMN term_count", "ALTER TABLE chunks DROP COLUMN terms"],
    3: ["ALTER TABLE chunks DROP COLUMN term_count", "UPDATE chunks SET terms = 'not words'"],
}


@pytest.mark.parametrize("version", sorted(OLD_SCHEMAS))
def test_an_index_without_stored_terms_is_searched_then_rebuilt(
    open_ws: OpenFn, tmp_path: Path, version: int
) -> None:
    """An index of an older schema still answers, with the same scores (terms computed per
    hit, never read in the old form), and the next sync rebuilds it."""
    ws = write_workspace(tmp_path / "ws", NOTES)
    memory = open_ws(ws, provider="none", cache={"recall": {"enabled": False}})
    memory.sync()
    expected = [(r.path, r.score) for r in memory.search("harbour crane", min_score=0.0)]
    db = _db(memory)
    memory.close()
    store = IndexStore(db)
    with store.conn:
        for statement in OLD_SCHEMAS[version]:
            store.conn.execute(statement)
        meta = store.read_meta()
        assert meta is not None and meta["schema_version"] == SCHEMA_VERSION
        store.conn.execute(
            "UPDATE meta SET value = json_set(value, '$.schema_version', ?)", (version,)
        )
    store.close()
    assert not IndexStore(db, read_only=True).has_terms

    old = open_ws(ws, provider="none", cache={"recall": {"enabled": False}})
    assert [(r.path, r.score) for r in old.search("harbour crane", min_score=0.0)] == expected
    old.sync()
    assert IndexStore(_db(old), read_only=True).has_terms
    assert [(r.path, r.score) for r in old.search("harbour crane", min_score=0.0)] == expected


CATS = {
    "memory/black.md": "# Notes\n\n黑猫睡觉。\n",  # 猫 ends its run
    "memory/kitten.md": "# Notes\n\n猫咪很小。\n",  # 猫 starts one
    "memory/small.md": "# Notes\n\n小猫咪和小猫。\n",  # inside one, and at the end of another
    "memory/dog.md": "# Notes\n\n小狗跑步。\n",
    # more chunks without 猫: a term in more than half of them is dropped from the query
    **{f"memory/other-{i}.md": f"# Notes\n\n天气{i}很好。\n" for i in range(4)},
}


def test_a_single_cjk_character_finds_every_occurrence(open_ws: OpenFn, tmp_path: Path) -> None:
    """The FTS table holds bigrams and each run's last character; a one-character term is a
    prefix query, so every chunk holding the character matches, wherever it stands."""
    memory = open_ws(write_workspace(tmp_path / "ws", CATS), provider="none")
    memory.sync()
    store = IndexStore(_db(memory), read_only=True)
    assert store.cjk_prefixes
    assert store.doc_frequencies(["猫", "小猫", "狗"], 100) == {"猫": 3, "小猫": 1, "狗": 1}
    found = {h.path for h in memory.search("猫 狗", max_results=10, min_score=0.0)}
    assert found == {p for p in CATS if "other" not in p}
    hits = memory.search("猫", max_results=10, min_score=0.0)
    assert {h.path for h in hits} == {"memory/black.md", "memory/kitten.md", "memory/small.md"}
    assert hits[0].path == "memory/small.md", "two occurrences rank first"


def test_an_index_of_schema_2_is_searched_with_plain_terms_then_rebuilt(
    open_ws: OpenFn, tmp_path: Path
) -> None:
    """Schema 2 indexed every CJK unigram: its one-character terms are not prefix queries
    (which would also count the bigrams), and the next sync rebuilds it."""
    ws = write_workspace(tmp_path / "ws", CATS)
    memory = open_ws(ws, provider="none", cache={"recall": {"enabled": False}})
    memory.sync()
    db = _db(memory)
    memory.close()
    store = IndexStore(db)
    with store.conn:
        store.conn.execute("UPDATE meta SET value = json_set(value, '$.schema_version', 2)")
    store.close()
    old = IndexStore(db, read_only=True)
    assert not old.cjk_prefixes
    assert build_fts_query("猫", cjk_prefixes=old.cjk_prefixes).match == '"猫"'  # type: ignore[union-attr]
    assert build_fts_query("猫", cjk_prefixes=True).match == '"猫"*'  # type: ignore[union-attr]
    reopened = open_ws(ws, provider="none", cache={"recall": {"enabled": False}})
    reopened.sync()
    assert IndexStore(_db(reopened), read_only=True).cjk_prefixes
    assert len(reopened.search("猫", max_results=10, min_score=0.0)) == 3


def test_the_fts_text_is_nfc_as_queries_are(open_ws: OpenFn, tmp_path: Path) -> None:
    """A compatibility ideograph (U+F900) and decomposed Hangul are found by what a query
    becomes after NFC (U+8C48, the syllable)."""
    notes = {
        "memory/compat.md": "# Notes\n\n\uf900\u5b50的故事。\n",
        "memory/hangul.md": "# Notes\n\n\u1112\u1161\u11ab\u1100\u1173\u11af 공부\n",
        **{f"memory/other-{i}.md": f"# Notes\n\n天气{i}很好。\n" for i in range(4)},
    }
    memory = open_ws(write_workspace(tmp_path / "ws", notes), provider="none")
    memory.sync()
    assert [h.path for h in memory.search("\u8c48\u5b50", min_score=0.0)] == ["memory/compat.md"]
    assert [h.path for h in memory.search("한글", min_score=0.0)] == ["memory/hangul.md"]


QUESTIONS = ["猫在哪里睡觉", "小猫咪", "天气很好吗", "北京的猫", "狗", "猫 天气3 ok"]


def test_skipping_terms_no_chunk_holds_changes_no_score(
    open_ws: OpenFn, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The boost looks only for CJK terms some chunk holds; the scores are those of looking
    for every term."""
    import memwell_sqlite.search as search

    memory = open_ws(
        write_workspace(tmp_path / "ws", CATS),
        provider="none",
        cache={"recall": {"enabled": False}},
    )
    memory.sync()
    fast = [[(h.path, h.score) for h in memory.search(q, min_score=0.0)] for q in QUESTIONS]
    skipped: list[list[str]] = []
    original = search._cjk_terms_in_no_chunk

    def recording(store: IndexStore) -> object:
        absent = original(store)
        assert absent is not None

        def record(terms: frozenset[str]) -> list[str]:
            found = absent(terms)
            skipped.append(found)
            return found

        return record

    monkeypatch.setattr(search, "_cjk_terms_in_no_chunk", recording)
    memory.search(QUESTIONS[0], min_score=0.0)
    assert "哪里" in skipped[0], "a bigram in no chunk is skipped"
    monkeypatch.setattr(search, "_cjk_terms_in_no_chunk", lambda store: None)
    slow = [[(h.path, h.score) for h in memory.search(q, min_score=0.0)] for q in QUESTIONS]
    assert fast == slow and any(fast)
