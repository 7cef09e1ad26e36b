"""Keyword (BM25) and vector candidates of the active generation, in one prepared statement.

Keyword relevance is FTS5's BM25 (k1 = 1.2, b = 0.75, IDF floored at 1e-6) over the
generation's postings (:mod:`.postings`); document frequencies come from ``term_stats``,
kept by the writers. Terms found in more than half of the chunks are dropped when a rarer
one exists, as the builtin backend does (their IDF is zero there).

The keyword part is exact and pruned (MaxScore over term bounds): each term's contribution
is at most ``idf * (k1 + 1)``. The postings of the rarest terms (:data:`SEED_POSTINGS`) give
seed chunks whose full scores (one index probe per term and seed: ``OFFSET 0`` keeps the
planner from reading every posting of every term instead) set ``theta``, at most the true
``limit``-th best. The terms of smallest bounds adding up to less than ``theta`` (the
*optional* ones) cannot lift a chunk there alone, so candidates are the postings of the other
(*essential*) terms, scored on them; the ``limit``-th best partial score is a second floor,
and the optional terms' postings are looked up only for candidates whose partial score plus
the optional bounds reaches it. The result is exactly BM25's best ``limit`` (ties by chunk
id). (Per-block bounds over chunk-id blocks pruned almost nothing: nearly every block holds
the common terms.)

Vector relevance is the cosine similarity, exact below ``exact_search_below`` chunks, else
through the generation's HNSW index; keyword candidates also carry their exact cosine, so
hybrid fusion sees every candidate's similarity (as the builtin backend does).

One statement reads the statistics and both candidate lists, with the namespace and the
generation spelled as literals (so the planner uses that generation's partial indexes), and
is prepared on the server once per connection. It also returns the active generation and
its size (when a rebuild switched generations, the search runs again on the new one) and,
for keyword searches, each query term's document frequency (the score floor weighs a keyword
hit by the share of the question's informative terms it holds).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

import numpy as np
from memwell.plugin import Candidate, Vector
from psycopg import sql

from .db import Conn
from .lexemes import QueryTerms
from .schema import generation_filter, vector_expr, vector_filter
from .store import SOURCE, Store

K1 = 1.2
B = 0.75
SEED_POSTINGS = 500
"""Postings of the rarest terms scored first to find ``theta`` (any number is exact)."""
ATTEMPTS = 3


def _bm25(tf: str, length: str) -> str:
    """BM25's term weight for frequency ``tf`` in a chunk of ``length`` terms (float8), with
    ``g.norm`` = ``k1 * b / avgdl`` (fewer operations per posting than the textbook form)."""
    return (
        f"t.idf * {tf}::float8 * {K1 + 1}::float8 / "
        f"({tf}::float8 + {K1 * (1 - B)}::float8 + {length}::float8 * g.norm)"
    )


_KEYWORD = """
g AS (
    SELECT greatest(chunk_count, 1)::float8 AS n,
           {kb}::float8 * greatest(chunk_count, 1)::float8 / greatest(token_count, 1)::float8
           AS norm
    FROM {generations} WHERE {gen_g}
),
q AS (
    SELECT t.lexeme, coalesce(s.df, 0) AS df
    FROM unnest(%(lexemes)s::text[]) AS t(lexeme)
    LEFT JOIN {term_stats} s ON {gen_s} AND s.lexeme = t.lexeme
),
t AS MATERIALIZED (
    SELECT q.lexeme, q.df, greatest(ln((g.n - q.df + 0.5) / (q.df + 0.5)), 1e-6) AS idf
    FROM q CROSS JOIN g
    WHERE q.df > 0 AND (q.df <= floor(g.n / 2)
          OR NOT EXISTS (SELECT 1 FROM q r WHERE r.df > 0 AND r.df <= floor(g.n / 2)))
),
seed AS MATERIALIZED (
    SELECT p.chunk_id, sum({score}) AS s
    FROM (SELECT lexeme, idf FROM (
              SELECT lexeme, idf, sum(df) OVER (ORDER BY df, lexeme) - df AS before FROM t
          ) r WHERE before < {seed}) t
    CROSS JOIN g JOIN {postings} p ON {gen_p} AND p.lexeme = t.lexeme
    GROUP BY p.chunk_id ORDER BY s DESC, p.chunk_id LIMIT %(limit)s
),
theta AS MATERIALIZED (
    SELECT CASE WHEN count(*) >= %(limit)s THEN min(f.s) * (1 - 1e-9) ELSE 0 END AS v
    FROM (
        SELECT sum({score}) AS s FROM seed CROSS JOIN t CROSS JOIN g
        CROSS JOIN LATERAL (
            SELECT p.tf, p.len FROM {postings} p
            WHERE {gen_p} AND p.lexeme = t.lexeme AND p.chunk_id = seed.chunk_id OFFSET 0
        ) p
        GROUP BY seed.chunk_id
    ) f
),
ess AS MATERIALIZED (
    SELECT t.lexeme, t.idf, sum(t.idf * {top}) OVER (ORDER BY t.idf, t.lexeme) < theta.v
           AS optional, t.idf * {top} AS bound
    FROM t CROSS JOIN theta
),
rest AS MATERIALIZED (SELECT coalesce(sum(bound), 0) AS bound FROM ess WHERE optional),
cand AS MATERIALIZED (
    SELECT p.chunk_id, sum({score}) AS s
    FROM ess t CROSS JOIN g JOIN {postings} p ON {gen_p} AND p.lexeme = t.lexeme
    WHERE NOT t.optional
    GROUP BY p.chunk_id
),
floor AS MATERIALIZED (
    SELECT greatest(theta.v, coalesce((
        SELECT s * (1 - 1e-9) FROM cand ORDER BY s DESC OFFSET %(limit)s - 1 LIMIT 1), 0)) AS v
    FROM theta
),
kw AS (
    SELECT cand.chunk_id AS id, cand.s + coalesce((
        SELECT sum({score}) FROM ess t CROSS JOIN g
        JOIN {postings} p ON {gen_p} AND p.lexeme = t.lexeme AND p.chunk_id = cand.chunk_id
        WHERE t.optional), 0) AS score
    FROM cand CROSS JOIN rest CROSS JOIN floor
    WHERE cand.s + rest.bound >= floor.v
    ORDER BY score DESC, id LIMIT %(limit)s
)"""

_VECTOR = """
vec AS (
    SELECT c.id, 1 - ({expr} <=> %(qvec)s::vector({dims})) AS score
    FROM {chunks} c
    WHERE {gen_c} AND c.{vfilter}
    ORDER BY {expr} <=> %(qvec)s::vector({dims}) LIMIT %(limit)s
)"""

_TAIL = """
SELECT r.kind, r.score, c.id, c.path, c.start_line, c.end_line, c.text, {cosine}
FROM ({parts}) r JOIN {chunks} c ON c.id = r.id
UNION ALL
SELECT 'g', n.generation, g.chunk_count, NULL, NULL, NULL, NULL, NULL
FROM {namespaces} n JOIN {generations} g USING (namespace, generation)
WHERE n.namespace = {ns}{terms}"""

_TERMS = """
UNION ALL
SELECT 't', q.df, NULL, q.lexeme, NULL, NULL, NULL, NULL FROM q"""


@dataclass(frozen=True)
class Found:
    """The two candidate lists of one search (either may be empty); ``cosines`` holds the
    exact cosine of each keyword candidate that has a vector; ``indexed`` is false when the
    namespace has never been indexed; ``frequencies`` holds each query lexeme's document
    frequency in the generation searched (keyword searches)."""

    keyword: list[Candidate]
    vector: list[Candidate]
    cosines: dict[str, float] = field(default_factory=dict)
    indexed: bool = True
    frequencies: dict[str, int] = field(default_factory=dict)


@dataclass(frozen=True)
class Active:
    """The generation searches go to and its size (which picks exact or HNSW search)."""

    generation: int
    chunks: int


@lru_cache(maxsize=256)
def statement(
    store: Store,
    generation: int,
    keyword: bool,
    vector: tuple[str, int] | None,
    exact: bool,
) -> str:
    """The search statement's text for one generation and shape (cached: its text is what
    the connection's prepared statements are keyed on)."""
    ns = sql.Literal(store.namespace)
    where = generation_filter(store.namespace, generation)
    ctes: list[sql.Composable] = []
    parts: list[sql.Composable] = []
    if keyword:
        ctes.append(
            sql.SQL(_KEYWORD).format(
                generations=store.t("generations"),
                term_stats=store.t("term_stats"),
                postings=store.t("postings"),
                gen_g=where,
                gen_s=generation_filter(store.namespace, generation, "s"),
                gen_p=generation_filter(store.namespace, generation, "p"),
                seed=sql.Literal(SEED_POSTINGS),
                top=sql.Literal(K1 + 1),
                kb=sql.Literal(K1 * B),
                score=sql.SQL(_bm25("p.tf", "p.len")),
            )
        )
        parts.append(sql.SQL("SELECT 'k' AS kind, id, score FROM kw"))
    cosine: sql.Composable = sql.SQL("NULL::float8")
    if vector is not None:
        model, dims = vector
        expr = sql.SQL("c.embedding") if exact else sql.SQL("c.") + vector_expr(dims)
        ctes.append(
            sql.SQL(_VECTOR).format(
                expr=expr,
                dims=sql.Literal(dims),
                chunks=store.t("chunks"),
                gen_c=generation_filter(store.namespace, generation, "c"),
                vfilter=vector_filter(model, dims),
            )
        )
        parts.append(sql.SQL("SELECT 'v' AS kind, id, score FROM vec"))
        cosine = sql.SQL(
            "CASE WHEN r.kind = 'k' AND c.{vfilter} THEN "
            "1 - (c.embedding::vector({dims}) <=> %(qvec)s::vector({dims})) END"
        ).format(vfilter=vector_filter(model, dims), dims=sql.Literal(dims))
    query = (
        sql.SQL("WITH ")
        + sql.SQL(",").join(ctes)
        + sql.SQL(_TAIL).format(
            cosine=cosine,
            parts=sql.SQL(" UNION ALL ").join(parts),
            chunks=store.t("chunks"),
            namespaces=store.t("namespaces"),
            generations=store.t("generations"),
            ns=ns,
            terms=sql.SQL(_TERMS if keyword else ""),
        )
    )
    return query.as_string(None)


def active(conn: Conn, store: Store) -> Active | None:
    """The namespace's active generation and its size (None before the first index)."""
    row = conn.execute(
        store.q(
            "SELECT n.generation, g.chunk_count FROM {n} n JOIN {g} g "
            "USING (namespace, generation) WHERE n.namespace = %s",
            n="namespaces",
            g="generations",
        ),
        (store.namespace,),
    ).fetchone()
    return None if row is None else Active(int(row[0]), int(row[1]))


def run_search(
    conn: Conn,
    store: Store,
    known: Active | None,
    *,
    terms: QueryTerms | None,
    query_vector: Vector | None,
    model: str,
    limit: int,
    exact_below: int,
) -> tuple[Found, Active | None]:
    """Up to ``limit`` keyword and ``limit`` vector candidates of the active generation, and
    the active generation as the statement saw it (pass it as ``known`` next time).

    Keyword ``text_score`` is the raw BM25 score here; callers scale it.
    """
    use_vector = query_vector is not None and bool(query_vector.any())
    params: dict[str, Any] = {"limit": limit}
    if terms is not None:
        params["lexemes"] = list(terms.lexemes)
    vector: tuple[str, int] | None = None
    if use_vector:
        assert query_vector is not None
        params["qvec"] = np.asarray(query_vector, dtype=np.float32)
        vector = (model, int(query_vector.shape[0]))
    if terms is None and vector is None:
        return Found([], []), known
    found = Found([], [])
    for _ in range(ATTEMPTS):
        if known is None:
            known = active(conn, store)
            if known is None:
                return Found([], [], indexed=False), None
        text = statement(
            store, known.generation, terms is not None, vector, known.chunks < exact_below
        )
        rows = conn.execute(text, params, prepare=True).fetchall()
        found, now = _found(rows)
        if now == known:
            return found, known
        if now is None or now.generation == known.generation:
            return found, now  # same generation, other size: next search adapts
        known = now
    return found, known


def _found(rows: list[tuple[Any, ...]]) -> tuple[Found, Active | None]:
    now: Active | None = None
    keyword: list[Candidate] = []
    vector: list[Candidate] = []
    cosines: dict[str, float] = {}
    frequencies: dict[str, int] = {}
    for kind, score, chunk_id, path, start, end, text, cosine in rows:
        if kind == "g":
            now = Active(int(score), int(chunk_id))
            continue
        if kind == "t":
            frequencies[path] = int(score)
            continue
        cand = Candidate(
            id=str(chunk_id), path=path, start_line=start, end_line=end, text=text, source=SOURCE
        )
        if kind == "k":
            cand.text_score = float(score)
            keyword.append(cand)
            if cosine is not None:
                cosines[cand.id] = max(0.0, min(1.0, float(cosine)))
        else:
            cand.vector_score = cand.score = max(0.0, min(1.0, float(score)))
            vector.append(cand)
    keyword.sort(key=lambda c: (-c.text_score, int(c.id)))
    vector.sort(key=lambda c: (-c.vector_score, int(c.id)))  # ties in insertion order
    return Found(keyword, vector, cosines, frequencies=frequencies), now
