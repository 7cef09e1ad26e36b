"""Keyword candidates from the postings: exactly BM25's best, kept right by every write,
and built on open for a namespace indexed before postings existed."""

from __future__ import annotations

import math
import random
from collections import Counter
from pathlib import Path
from typing import Any

import memwell_postgres.search as search
import psycopg
import pytest
from memwell.testing.conformance import write_workspace
from memwell_postgres.lexemes import index_text, query_terms
from pg_helpers import Build

WORDS = [f"w{i}" for i in range(400)]
QUERIES = [
    "w1 w2",
    "w3 w150",
    "w0 w5 w9 w300",
    "w7",
    "w2 w3 w4 w5 w6",
    "w399 w1",
    "w12 w40 w41",
    "w0 w1",  # common terms
    "w250 w251 w252",
    "nothing here",
]


def _corpus(seed: int, files: int = 40, paragraphs: int = 30) -> dict[str, str]:
    """Zipf-like words, so some terms are in most chunks and others in a few."""
    rng = random.Random(seed)
    weights = [1 / (i + 1) for i in range(len(WORDS))]
    out = {}
    for f in range(files):
        paras = [
            " ".join(rng.choices(WORDS, weights, k=rng.randint(3, 30))) for _ in range(paragraphs)
        ]
        out[f"memory/f{f:02d}.md"] = "\n\n".join(paras) + "\n"
    return out


def _reference(conn: Any, namespace: str, query: str) -> list[tuple[int, float]]:
    """BM25 as FTS5 computes it, over every chunk of the active generation, in Python: every
    matching chunk, best first."""
    rows = conn.execute(
        "SELECT c.id, c.text FROM memwell.chunks c JOIN memwell.namespaces n "
        "USING (namespace, generation) WHERE c.namespace = %s",
        (namespace,),
    ).fetchall()
    docs = {}
    for chunk_id, text in rows:
        indexed = index_text(text)
        docs[chunk_id] = ({t: len(p) for t, p in indexed.entries}, indexed.length)
    n = len(docs)
    avgdl = sum(length for _, length in docs.values()) / n
    df = Counter(t for tfs, _ in docs.values() for t in tfs)
    terms = query_terms(query)
    lexemes = [t for t in (terms.lexemes if terms else ()) if df[t]]
    if any(df[t] <= n // 2 for t in lexemes):
        lexemes = [t for t in lexemes if df[t] <= n // 2]
    idf = {t: max(math.log((n - df[t] + 0.5) / (df[t] + 0.5)), 1e-6) for t in lexemes}
    scores = {}
    for chunk_id, (tfs, length) in docs.items():
        s = sum(
            idf[t] * tfs[t] * 2.2 / (tfs[t] + 1.2 * (0.25 + 0.75 * length / avgdl))
            for t in lexemes
            if t in tfs
        )
        if s > 0:
            scores[chunk_id] = s
    return sorted(scores.items(), key=lambda kv: (-kv[1], kv[0]))


def _postgres(memory: Any, query: str, limit: int) -> list[tuple[int, float]]:
    with memory.db.connection() as conn:
        found, _ = search.run_search(
            conn,
            memory.store,
            None,
            terms=query_terms(query),
            query_vector=None,
            model=memory.indexer.model(),
            limit=limit,
            exact_below=0,
        )
    return [(int(c.id), c.text_score) for c in found.keyword]


def _assert_exact(got: list[tuple[int, float]], every: list[tuple[int, float]], limit: int) -> None:
    """``got`` is the best ``limit`` of ``every`` (the reference's whole ranking): the same
    scores, and the same chunks at each score (ties among the last may be cut either way)."""
    want = every[:limit]
    assert [round(s, 9) for _, s in got] == [round(s, 9) for _, s in want]

    def by_score(hits: list[tuple[int, float]]) -> dict[float, set[int]]:
        out: dict[float, set[int]] = {}
        for chunk_id, score in hits:
            out.setdefault(round(score, 9), set()).add(chunk_id)
        return out

    mine, ref, tied = by_score(got), by_score(want), by_score(every)
    cut = round(want[-1][1], 9) if want else None
    for score, ids in mine.items():
        assert ids == ref[score] or (score == cut and ids <= tied[score]), score


@pytest.fixture
def seed_postings(monkeypatch: pytest.MonkeyPatch) -> Any:
    def set_seed(value: int) -> None:
        monkeypatch.setattr(search, "SEED_POSTINGS", value)
        search.statement.cache_clear()

    yield set_seed
    search.statement.cache_clear()


@pytest.mark.parametrize("seed", [1, 30, 500])
def test_keyword_top_k_is_exactly_bm25(
    seed: int, seed_postings: Any, build: Build, tmp_path: Path, pg_server: Any
) -> None:
    seed_postings(seed)
    ws = write_workspace(tmp_path / "ws", _corpus(7))
    memory = build(ws, provider="none", chunking={"tokens": 24, "overlap": 0})
    memory.sync()
    assert memory.status().chunks > 6 * 128, "several blocks, so pruning has work to do"

    def check() -> None:
        with psycopg.connect(pg_server.dsn) as conn:
            for query in QUERIES:
                every = _reference(conn, memory.namespace, query)
                assert every or query == "nothing here"
                for limit in (1, 10, 40):
                    _assert_exact(_postgres(memory, query, limit), every, limit)

    check()
    # edits, additions and deletions keep the postings and their bounds right
    edited = _corpus(8, files=6)
    for path, text in edited.items():
        (ws / path).write_text(text, encoding="utf-8")
    (ws / "memory" / "f10.md").unlink()
    (ws / "memory" / "new.md").write_text("w1 w399 w399 w250\n\nw2 w2 w2\n", encoding="utf-8")
    memory.sync()
    check()


def test_postings_follow_every_write(build: Build, tmp_path: Path, pg_server: Any) -> None:
    """Postings equal the chunks' terms after edits and deletes."""
    ws = write_workspace(tmp_path / "ws", _corpus(3, files=5, paragraphs=8))
    memory = build(ws, provider="none")
    memory.sync()
    (ws / "memory" / "f01.md").write_text("w5 w6 w7\n", encoding="utf-8")
    (ws / "memory" / "f02.md").unlink()
    memory.sync()
    ns = memory.namespace
    with psycopg.connect(pg_server.dsn) as conn:
        postings = set(
            conn.execute(
                "SELECT p.lexeme, p.chunk_id, p.tf, p.len FROM memwell.postings p "
                "JOIN memwell.namespaces n USING (namespace, generation) WHERE p.namespace = %s",
                (ns,),
            ).fetchall()
        )
        recount = set(
            conn.execute(
                "SELECT u.lexeme, c.id, cardinality(u.positions), c.ntokens "
                "FROM memwell.chunks c JOIN memwell.namespaces n USING (namespace, generation)"
                ", unnest(c.tsv) u WHERE c.namespace = %s",
                (ns,),
            ).fetchall()
        )
    assert postings == recount


def test_a_namespace_without_postings_gets_them_on_open(
    build: Build, tmp_path: Path, pg_server: Any
) -> None:
    ws = write_workspace(tmp_path / "ws", _corpus(5, files=4, paragraphs=6))
    first = build(ws, provider="none", pg={"namespace": "before-postings"})
    first.sync()
    before = [(r.path, r.start_line, round(r.score, 6)) for r in first.search("w3 w40")]
    assert before
    with psycopg.connect(pg_server.dsn) as conn:  # as an older memwell left it
        conn.execute("DELETE FROM memwell.postings WHERE namespace = 'before-postings'")
        conn.execute(  # the block bounds it kept and no search read
            "CREATE TABLE memwell.posting_blocks (namespace text, generation bigint, lexeme text)"
        )
        conn.execute(
            "UPDATE memwell.generations SET postings = false WHERE namespace = 'before-postings'"
        )
    reopened = build(ws, provider="none", pg={"namespace": "before-postings"})
    assert "keyword postings built on open" in reopened.status().custom["migrated"]
    with psycopg.connect(pg_server.dsn) as conn:
        assert conn.execute("SELECT to_regclass('memwell.posting_blocks')").fetchone() == (None,)
    after = [(r.path, r.start_line, round(r.score, 6)) for r in reopened.search("w3 w40")]
    assert after == before
    again = build(ws, provider="none", pg={"namespace": "before-postings"})
    assert "migrated" not in again.status().custom
