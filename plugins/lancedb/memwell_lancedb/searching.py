"""Searching the Markdown index: BM25 full-text and cosine vector candidates, fused, decayed,
diversified and floored by the core's ranking pipeline."""

from __future__ import annotations

import functools
import logging
import re
from collections.abc import Iterable, Sequence
from typing import Any

from lancedb.query import MatchQuery  # type: ignore[import-untyped,unused-ignore]
from memwell.plugin import (
    CJK_CLASS,
    Candidate,
    SearchRequest,
    Vector,
    clamp01,
    fuse_hybrid,
    keyword_floor,
    ranked_order,
    segment_query_terms,
)

from .db import Table, in_filters
from .index_tables import FTS_COLUMN, IndexTables

log = logging.getLogger(__name__)

_WORD = re.compile(r"\w+")
_CJK_RUN = re.compile(f"[{CJK_CLASS}]+")


def bm25_to_score(score: float) -> float:
    """LanceDB's BM25 score (>= 0, higher is better) mapped into [0, 1): ``s / (1 + s)``."""
    return score / (1.0 + score) if score > 0 else 0.0


def keyword_terms(query: str) -> list[str]:
    """Full-text terms: the words outside CJK runs plus the runs' bigrams (see ``cjk``)."""
    words = _WORD.findall(_CJK_RUN.sub(" ", query))
    return [*words, *segment_query_terms(query)]


class IndexSearching(IndexTables):
    """Keyword, vector and hybrid search over the chunks table."""

    def _source_filter(self, sources: Sequence[str]) -> str:
        return " OR ".join(in_filters("source", sources))

    def _candidate(self, row: dict[str, Any]) -> Candidate:
        return Candidate(
            id=row["id"],
            path=row["path"],
            start_line=row["start_line"],
            end_line=row["end_line"],
            text=row["text"],
            source=row["source"],
        )

    def keyword(
        self, table: Table, query: str, limit: int, sources: Sequence[str]
    ) -> list[Candidate]:
        terms = keyword_terms(query)
        if not terms:
            return []
        columns = ["id", "path", "source", "start_line", "end_line", "text", "_score"]
        match = MatchQuery(" ".join(terms), FTS_COLUMN)  # type: ignore[call-arg]
        try:
            rows = (
                table.search(match, query_type="fts")
                .where(self._source_filter(sources), prefilter=True)
                .limit(limit)
                .select(columns)
                .to_list()
            )
        except ValueError as exc:  # no full-text index yet: the next sync builds it
            log.warning("memwell lancedb: keyword search unavailable: %s", exc)
            return []
        out = []
        for row in rows:
            cand = self._candidate(row)
            cand.text_score = cand.score = bm25_to_score(float(row["_score"]))
            out.append(cand)
        return out

    def vector(
        self, table: Table, query_vector: Vector, limit: int, sources: Sequence[str]
    ) -> list[Candidate]:
        columns = ["id", "path", "source", "start_line", "end_line", "text", "_distance"]
        rows = (
            table.search(query_vector, vector_column_name="vector")
            .distance_type("cosine")
            .where(self._source_filter(sources), prefilter=True)
            .limit(limit)
            .select(columns)
            .to_list()
        )
        out = []
        for row in rows:
            cand = self._candidate(row)
            cand.vector_score = cand.score = clamp01(1.0 - float(row["_distance"]))
            out.append(cand)
        return out

    def _mtimes(self, paths: set[str]) -> dict[str, float]:
        table = self.db.open(self.files_name)
        if table is None or not paths:
            return {}
        found: dict[str, float] = {}
        for where in in_filters("path", paths):
            for row in table.search().where(where).select(["path", "mtime_ns"]).to_list():
                found[row["path"]] = row["mtime_ns"] / 1e9
        return found

    def _rank(self, items: list[Candidate], query: str) -> Iterable[Candidate]:
        """Date boost, decay, sort and MMR as configured; modification times are read once."""
        mtimes = functools.cache(lambda: self._mtimes({c.path for c in items}))
        return ranked_order(
            items,
            self.settings.query.hybrid,
            mtime_of=lambda path: mtimes().get(path),
            query=query,
        )

    def search(self, request: SearchRequest, query_vector: Vector | None) -> list[Candidate]:
        """Keyword and vector candidates, fused, decayed, diversified and filtered.

        Without a query vector this is keyword-only search: BM25 scores, and when nothing
        reaches ``request.min_score`` the best hits are returned anyway (the reference's
        floor 0).
        """
        sources = [s for s in self.settings.sources if s in request.sources]
        table = self.db.open(self.chunks_name)
        if table is None or not sources:
            return []
        cfg, query, limit = request.hybrid, request.query, request.pool
        max_results, min_score = request.limit, request.min_score
        if query_vector is None:
            ranked = self._rank(self.keyword(table, query, limit, sources), query)
            return keyword_floor(ranked, min_score, max_results)
        vector = self.vector(table, query_vector, limit, sources) if query_vector.any() else []
        if not cfg.enabled:
            return [c for c in vector if c.score >= min_score][:max_results]
        keyword = self.keyword(table, query, limit, sources)
        mtimes = functools.cache(lambda: self._mtimes({c.path for c in [*vector, *keyword]}))
        return fuse_hybrid(
            vector,
            keyword,
            cfg,
            min_score=min_score,
            max_results=max_results,
            mtime_of=lambda path: mtimes().get(path),
            query=query,
        )
