"""Keyword (BM25) and vector candidates in one SQL statement, ranked by memwell's pipeline.

Keyword relevance is FTS5's BM25 (k1 = 1.2, b = 0.75, IDF floored at 1e-6), computed in SQL
from the GIN-indexed ``tsvector`` of each chunk: document frequencies are counted with the
index, term frequencies read from the positions, lengths stored per chunk. Terms found in
more than half of the chunks are dropped first, as the builtin backend does (their IDF is
zero). Vector relevance is the cosine similarity through the model's HNSW index. Both lists
come back from one statement that also reads the active generation, so one search sees one
consistent generation even while another host switches to a new one.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from memwell.embeddings import Vector
from memwell.retrieval.candidate import Candidate
from psycopg import sql

from .db import Conn
from .lexemes import QueryTerms
from .schema import vector_expr
from .store import SOURCE, Store

K1 = 1.2
B = 0.75

_KEYWORD = """
kw_terms AS (
    SELECT t.lexeme, t.query,
           (SELECT count(*) FROM {chunks} c WHERE c.namespace = %(ns)s
              AND c.generation = (SELECT generation FROM g) AND c.tsv @@ t.query) AS df
    FROM unnest(%(lexemes)s::text[], %(queries)s::tsquery[]) AS t(lexeme, query)
),
kw_common AS (SELECT EXISTS (SELECT 1 FROM kw_terms, st WHERE df > 0 AND df <= st.n / 2) AS rare),
kw_kept AS (
    SELECT kw_terms.lexeme, kw_terms.query,
           greatest(ln((st.n - df + 0.5) / (df + 0.5)), 1e-6) AS idf
    FROM kw_terms, st, kw_common
    WHERE df > 0 AND (df <= st.n / 2 OR NOT kw_common.rare)
),
kw_hits AS (
    SELECT c.id, c.tsv, c.ntokens FROM {chunks} c
    WHERE c.namespace = %(ns)s AND c.generation = (SELECT generation FROM g)
      AND c.tsv @@ (SELECT string_agg(query::text, ' | ')::tsquery FROM kw_kept)
),
kw AS (
    SELECT h.id,
           sum(k.idf * (u.tf * (%(k1)s + 1)) /
               (u.tf + %(k1)s * (1 - %(b)s + %(b)s * h.ntokens / st.avgdl))) AS score
    FROM kw_hits h
    CROSS JOIN LATERAL (
        SELECT lexeme, cardinality(positions) AS tf
        FROM unnest(ts_filter(setweight(h.tsv, 'A', %(lexemes)s::text[]), '{{a}}'))
    ) u
    JOIN kw_kept k ON k.lexeme = u.lexeme
    CROSS JOIN st
    GROUP BY h.id ORDER BY score DESC, h.id LIMIT %(limit)s
)"""

_VECTOR = """
vec AS (
    SELECT c.id, 1 - ({expr} <=> %(qvec)s::vector({dims})) AS score
    FROM {chunks} c
    WHERE c.namespace = %(ns)s AND c.generation = (SELECT generation FROM g)
      AND c.model = {model} AND c.dims = {dims}
    ORDER BY {expr} <=> %(qvec)s::vector({dims}) LIMIT %(limit)s
)"""

_HEAD = """
WITH g AS (SELECT generation FROM {namespaces} WHERE namespace = %(ns)s),
st AS (
    SELECT greatest(chunk_count, 1)::float8 AS n,
           greatest(token_count, 1)::float8 / greatest(chunk_count, 1) AS avgdl
    FROM {generations} WHERE namespace = %(ns)s AND generation = (SELECT generation FROM g)
)"""

_TAIL = """
SELECT r.kind, r.score, c.id, c.path, c.start_line, c.end_line, c.text
FROM ({parts}) r JOIN {chunks} c ON c.id = r.id"""


@dataclass(frozen=True)
class Found:
    """The two candidate lists of one search (either may be empty)."""

    keyword: list[Candidate]
    vector: list[Candidate]


def run_search(
    conn: Conn,
    store: Store,
    *,
    terms: QueryTerms | None,
    query_vector: Vector | None,
    model: str,
    limit: int,
) -> Found:
    """Fetch up to ``limit`` keyword and ``limit`` vector candidates in one round trip.

    Keyword ``text_score`` is the raw BM25 score here; callers scale it.
    """
    tables = {
        "namespaces": store.t("namespaces"),
        "generations": store.t("generations"),
        "chunks": store.t("chunks"),
    }
    ctes: list[sql.Composable] = [sql.SQL(_HEAD).format(**tables)]
    parts: list[sql.Composable] = []
    params: dict[str, Any] = {"ns": store.namespace, "limit": limit, "k1": K1, "b": B}
    if terms is not None:
        ctes.append(sql.SQL(_KEYWORD).format(**tables))
        parts.append(sql.SQL("SELECT 'k' AS kind, id, score FROM kw"))
        params.update(lexemes=list(terms.lexemes), queries=terms.tsqueries)
    if query_vector is not None and query_vector.any():
        dims = int(query_vector.shape[0])
        ctes.append(
            sql.SQL(_VECTOR).format(
                expr=sql.SQL("c.") + vector_expr(dims),
                dims=sql.Literal(dims),
                model=sql.Literal(model),
                **tables,
            )
        )
        parts.append(sql.SQL("SELECT 'v' AS kind, id, score FROM vec"))
        params["qvec"] = np.asarray(query_vector, dtype=np.float32)
    if not parts:
        return Found([], [])
    tail = sql.SQL(_TAIL).format(parts=sql.SQL(" UNION ALL ").join(parts), **tables)
    query = sql.SQL(",").join(ctes) + tail
    rows = conn.execute(query, params).fetchall()
    keyword: list[Candidate] = []
    vector: list[Candidate] = []
    for kind, score, chunk_id, path, start, end, text in rows:
        cand = Candidate(
            id=str(chunk_id), path=path, start_line=start, end_line=end, text=text, source=SOURCE
        )
        if kind == "k":
            cand.text_score = float(score)
            keyword.append(cand)
        else:
            cand.vector_score = cand.score = max(0.0, min(1.0, float(score)))
            vector.append(cand)
    keyword.sort(key=lambda c: c.text_score, reverse=True)
    vector.sort(key=lambda c: c.vector_score, reverse=True)
    return Found(keyword, vector)
