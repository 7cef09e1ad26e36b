"""Keyword (BM25) and vector candidates from the active generation, ranked by memwell's pipeline.

Keyword relevance is FTS5's BM25 (k1 = 1.2, b = 0.75, IDF floored at 1e-6), computed in SQL
from each chunk's ``tsvector``; document frequencies come from ``term_stats``, kept by the
writers, and lengths are stored per chunk. Terms found in more than half of the chunks are
dropped first, as the builtin backend does (their IDF is zero).

Scoring every chunk that matches any query term is what makes keyword search slow on a large
namespace, so the candidates are found with the rarest terms only (MaxScore pruning): a chunk
matching none of them scores less than the sum of the other terms' largest possible
contributions, ``idf * (k1 + 1)`` each. When the ``limit``-th best candidate scores above
that bound, no other chunk can enter the list and the result is exactly BM25's top ``limit``;
otherwise the next rarer term joins the candidate terms and the keyword part runs again.

Vector relevance is the cosine similarity through the generation's HNSW index. The first
statement reads the active generation and the terms' statistics; the second fetches both
candidate lists with the generation spelled as a literal (so the planner uses that
generation's partial indexes) and checks it is still active, else the search starts over.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from memwell.embeddings import Vector
from memwell.retrieval.candidate import Candidate
from psycopg import sql

from .db import Conn
from .lexemes import QueryTerms, tsquery_literal
from .schema import generation_filter, vector_expr, vector_filter
from .store import SOURCE, Store

K1 = 1.2
B = 0.75
CANDIDATE_BUDGET = 20_000
"""Chunks matched by the first candidate terms, beyond the rarest one (then it is exact)."""
ATTEMPTS = 3

_STATS = """
SELECT set_config('hnsw.ef_search', %(ef)s, false), n.generation,
       greatest(g.chunk_count, 1)::float8, greatest(g.token_count, 1)::float8,
       (SELECT array_agg(coalesce(s.df, 0) ORDER BY t.ord)
          FROM unnest(%(lexemes)s::text[]) WITH ORDINALITY AS t(lexeme, ord)
          LEFT JOIN {term_stats} s ON s.namespace = n.namespace
           AND s.generation = n.generation AND s.lexeme = t.lexeme)
FROM {namespaces} n JOIN {generations} g USING (namespace, generation)
WHERE n.namespace = %(ns)s"""

_KEYWORD = """
kw_terms AS (SELECT * FROM unnest(%(lexemes)s::text[], %(idfs)s::float8[]) AS t(lexeme, idf)),
kw AS (
    SELECT c.id,
           sum(k.idf * (u.tf * (%(k1)s + 1)) /
               (u.tf + %(k1)s * (1 - %(b)s + %(b)s * c.ntokens / %(avgdl)s))) AS score
    FROM {chunks} c
    CROSS JOIN LATERAL (
        SELECT lexeme, cardinality(positions) AS tf
        FROM unnest(ts_filter(setweight(c.tsv, 'A', %(lexemes)s::text[]), '{{a}}'))
    ) u
    JOIN kw_terms k ON k.lexeme = u.lexeme
    WHERE {generation} AND c.tsv @@ %(match)s::tsquery
    GROUP BY c.id ORDER BY score DESC, c.id LIMIT %(limit)s
)"""

_VECTOR = """
vec AS (
    SELECT c.id, 1 - ({expr} <=> %(qvec)s::vector({dims})) AS score
    FROM {chunks} c
    WHERE {generation} AND {vfilter}
    ORDER BY {expr} <=> %(qvec)s::vector({dims}) LIMIT %(limit)s
)"""

_TAIL = """
SELECT r.kind, r.score, c.id, c.path, c.start_line, c.end_line, c.text
FROM ({parts}) r JOIN {chunks} c ON c.id = r.id
UNION ALL SELECT 'g', generation, NULL, NULL, NULL, NULL, NULL
FROM {namespaces} WHERE namespace = %(ns)s"""


@dataclass(frozen=True)
class Found:
    """The two candidate lists of one search (either may be empty)."""

    keyword: list[Candidate]
    vector: list[Candidate]


@dataclass(frozen=True)
class Term:
    lexeme: str
    df: int
    idf: float

    @property
    def bound(self) -> float:
        """The most this term adds to any chunk's BM25 score."""
        return self.idf * (K1 + 1)


@dataclass(frozen=True)
class Stats:
    """The active generation and its BM25 statistics, read before the search."""

    generation: int
    chunks: float
    avgdl: float
    terms: list[Term]


def kept_terms(lexemes: Sequence[str], dfs: Sequence[int], chunks: float) -> list[Term]:
    """Terms present in the generation, rarest first; those in more than half of the chunks
    are dropped when a rarer one exists (FTS5 gives them no weight)."""
    present = [(t, df) for t, df in zip(lexemes, dfs, strict=True) if df > 0]
    half = chunks // 2
    if any(df <= half for _, df in present):
        present = [(t, df) for t, df in present if df <= half]
    terms = [
        Term(t, df, max(math.log((chunks - df + 0.5) / (df + 0.5)), 1e-6)) for t, df in present
    ]
    return sorted(terms, key=lambda t: (t.df, t.lexeme))


def first_candidate_terms(terms: Sequence[Term]) -> int:
    """How many of the rarest terms find the first candidates: the rarest one, then more
    while the chunks they match stay within :data:`CANDIDATE_BUDGET`."""
    count, matched = 1, terms[0].df
    while count < len(terms) and matched + terms[count].df <= CANDIDATE_BUDGET:
        matched += terms[count].df
        count += 1
    return count


def is_complete(scores: Sequence[float], rest: Sequence[Term], limit: int) -> bool:
    """Whether no chunk matching only ``rest`` can rank among the best ``limit``."""
    if not rest:
        return True
    return len(scores) >= limit and scores[limit - 1] > sum(t.bound for t in rest)


def _stats(conn: Conn, store: Store, terms: QueryTerms | None, ef: int) -> Stats | None:
    lexemes = list(terms.lexemes) if terms is not None else []
    query = sql.SQL(_STATS).format(
        term_stats=store.t("term_stats"),
        namespaces=store.t("namespaces"),
        generations=store.t("generations"),
    )
    row = conn.execute(query, {"ef": str(ef), "lexemes": lexemes, "ns": store.namespace}).fetchone()
    if row is None:
        return None
    _, generation, chunks, tokens, dfs = row
    kept = kept_terms(lexemes, [int(d) for d in dfs or []], float(chunks))
    return Stats(int(generation), float(chunks), float(tokens) / float(chunks), kept)


def _keyword_part(
    store: Store, stats: Stats, candidates: Sequence[Term], params: dict[str, Any]
) -> sql.Composable:
    params.update(
        lexemes=[t.lexeme for t in stats.terms],
        idfs=[t.idf for t in stats.terms],
        match=" | ".join(tsquery_literal(t.lexeme) for t in candidates),
        avgdl=stats.avgdl,
    )
    return sql.SQL(_KEYWORD).format(
        chunks=store.t("chunks"),
        generation=sql.SQL("c.") + generation_filter(store.namespace, stats.generation),
    )


def _vector_part(
    store: Store,
    stats: Stats,
    query_vector: Vector,
    model: str,
    params: dict[str, Any],
    *,
    exact: bool,
) -> sql.Composable:
    """Nearest chunks through the HNSW index, or (``exact``) by comparing every vector: the
    bare column does not match the index's expression, so the planner cannot use it."""
    dims = int(query_vector.shape[0])
    params["qvec"] = np.asarray(query_vector, dtype=np.float32)
    return sql.SQL(_VECTOR).format(
        expr=sql.SQL("c.embedding") if exact else sql.SQL("c.") + vector_expr(dims),
        dims=sql.Literal(dims),
        chunks=store.t("chunks"),
        generation=sql.SQL("c.") + generation_filter(store.namespace, stats.generation),
        vfilter=sql.SQL("c.") + vector_filter(model, dims),
    )


def _fetch(
    conn: Conn, store: Store, ctes: dict[str, sql.Composable], params: dict[str, Any]
) -> tuple[int | None, list[Candidate], list[Candidate]]:
    """Run the candidate statement; (active generation, keyword, vector candidates)."""
    parts = [
        sql.SQL("SELECT {} AS kind, id, score FROM {}").format(sql.Literal(k), sql.Identifier(name))
        for k, name in (("k", "kw"), ("v", "vec"))
        if name in ctes
    ]
    query = (
        sql.SQL("WITH ")
        + sql.SQL(",").join(ctes.values())
        + sql.SQL(_TAIL).format(
            parts=sql.SQL(" UNION ALL ").join(parts),
            chunks=store.t("chunks"),
            namespaces=store.t("namespaces"),
        )
    )
    active: int | None = None
    keyword: list[Candidate] = []
    vector: list[Candidate] = []
    for kind, score, chunk_id, path, start, end, text in conn.execute(query, params).fetchall():
        if kind == "g":
            active = int(score)
            continue
        cand = Candidate(
            id=str(chunk_id), path=path, start_line=start, end_line=end, text=text, source=SOURCE
        )
        if kind == "k":
            cand.text_score = float(score)
            keyword.append(cand)
        else:
            cand.vector_score = cand.score = max(0.0, min(1.0, float(score)))
            vector.append(cand)
    keyword.sort(key=lambda c: (-c.text_score, int(c.id)))
    vector.sort(key=lambda c: (-c.vector_score, int(c.id)))  # ties in insertion order
    return active, keyword, vector


def run_search(
    conn: Conn,
    store: Store,
    *,
    terms: QueryTerms | None,
    query_vector: Vector | None,
    model: str,
    limit: int,
    ef_search: int,
    exact_below: int,
) -> Found:
    """Fetch up to ``limit`` keyword and ``limit`` vector candidates of the active generation.

    A generation of fewer than ``exact_below`` chunks is searched exactly (as the builtin
    backend does), a larger one through its HNSW index. Keyword ``text_score`` is the raw BM25
    score here; callers scale it.
    """
    use_vector = query_vector is not None and bool(query_vector.any())
    for _ in range(ATTEMPTS):
        stats = _stats(conn, store, terms, max(ef_search, limit))
        if stats is None:
            return Found([], [])
        ctes: dict[str, sql.Composable] = {}
        params: dict[str, Any] = {"ns": store.namespace, "limit": limit, "k1": K1, "b": B}
        count = first_candidate_terms(stats.terms) if stats.terms else 0
        if count:
            ctes["kw"] = _keyword_part(store, stats, stats.terms[:count], params)
        if use_vector:
            assert query_vector is not None
            exact = stats.chunks < exact_below
            ctes["vec"] = _vector_part(store, stats, query_vector, model, params, exact=exact)
        if not ctes:
            return Found([], [])
        active, keyword, vector = _fetch(conn, store, ctes, params)
        while count and not is_complete(
            [c.text_score for c in keyword], stats.terms[count:], limit
        ):
            count = len(stats.terms) if count * 2 >= len(stats.terms) else count * 2
            kw_params: dict[str, Any] = {"ns": store.namespace, "limit": limit, "k1": K1, "b": B}
            part = _keyword_part(store, stats, stats.terms[:count], kw_params)
            active, keyword, _ = _fetch(conn, store, {"kw": part}, kw_params)
        if active == stats.generation:
            return Found(keyword, vector)
    return Found(keyword, vector)
