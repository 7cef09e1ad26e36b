"""The search pipeline of the builtin backend (spec 4.1-4.7)."""

from __future__ import annotations

import math
import os
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

from memwell.config import MemwellSettings
from memwell.retrieval.candidate import Candidate
from memwell.retrieval.fts_query import build_fts_query, keyword_boost
from memwell.retrieval.pipeline import fuse_hybrid, keyword_floor, rank_candidates

from .store import IndexStore


def candidate_count(max_results: int, multiplier: int) -> int:
    """How many candidates each retriever fetches before fusion (24 by default)."""
    return min(200, max(1, max_results * multiplier))


def _rescale_bm25(keyword: Sequence[Candidate]) -> None:
    """Make keyword scores relative BM25: the best hit 1, the others in proportion.

    BM25 magnitudes depend on the corpus, and the spec's ``-rank / (1 - rank)`` mapping
    saturates (ranks -5.7 and -9 give 0.85 and 0.90), which leaves fusion unable to tell an
    exact rare-term match from a hit on common words. The mapping is inverted to recover the
    raw magnitude, then divided by the best one.
    """
    magnitudes = [
        c.text_score / (1 - c.text_score) if c.text_score < 1 else math.inf for c in keyword
    ]
    best = max(magnitudes, default=0.0)
    for cand, magnitude in zip(keyword, magnitudes, strict=True):
        if math.isinf(best):  # substring-only matches carry no BM25 rank
            cand.text_score = 1.0 if math.isinf(magnitude) else 0.0
        elif best > 0:
            cand.text_score = magnitude / best


class Searcher:
    """Runs keyword, vector and hybrid searches against one store."""

    def __init__(self, settings: MemwellSettings, workspace: Path) -> None:
        self.settings = settings
        self.workspace = workspace

    def _mtime(self, path: str) -> float | None:
        try:
            return os.stat(self.workspace / path).st_mtime
        except OSError:
            return None

    def keyword(
        self, store: IndexStore, query: str, limit: int, sources: Sequence[str]
    ) -> list[Candidate]:
        fts = build_fts_query(query, tokenizer=store.tokenizer, mode="or")
        if fts is None:
            return []
        if len(fts.terms) > 1 and not fts.like_terms:
            # Terms in more than half of the chunks have an IDF of zero in FTS5's BM25: they
            # cannot change the ranking, only make FTS5 score thousands of extra rows.
            half = store.chunk_total() // 2
            frequencies = store.doc_frequencies(fts.terms, half + 1)
            fts = fts.keeping({t for t, df in frequencies.items() if df <= half})
        filtered = not set(sources) >= set(self.settings.sources)
        return store.keyword_search(fts, limit, sources, prefetch=limit * 4 if filtered else limit)

    def keyword_only(
        self,
        store: IndexStore,
        query: str,
        *,
        max_results: int,
        min_score: float,
        sources: Sequence[str],
    ) -> list[Candidate]:
        """FTS-only mode (spec 4.4): BM25 plus the reference's boosts; relaxed floor 0."""
        limit = candidate_count(max_results, self.settings.query.hybrid.candidate_multiplier)
        hits = self.keyword(store, query, limit, sources)
        boosted = [
            replace(c, score=min(1.0, c.text_score + keyword_boost(query, c.text, c.path)))
            for c in hits
        ]
        ranked = rank_candidates(boosted, self.settings.query.hybrid, mtime_of=self._mtime)
        return keyword_floor(ranked, min_score, max_results)

    def vector_limit(self, max_results: int, sources: Sequence[str]) -> int:
        """How many nearest chunks :meth:`hybrid` needs from the vector index."""
        limit = candidate_count(max_results, self.settings.query.hybrid.candidate_multiplier)
        filtered = not set(sources) >= set(self.settings.sources)
        return limit * 2 if filtered else limit

    def vector(
        self,
        store: IndexStore,
        hits: Sequence[tuple[int, float]],
        limit: int,
        sources: Sequence[str],
    ) -> list[Candidate]:
        """Candidates of the vector index's ``hits`` (rowid, cosine) within ``sources``."""
        score_of = dict(hits)
        out: list[Candidate] = []
        for rowid, cand in store.chunks_by_rowid([r for r, _ in hits], sources)[:limit]:
            cand.vector_score = cand.score = max(0.0, min(1.0, score_of[rowid]))
            out.append(cand)
        return out

    def hybrid(
        self,
        store: IndexStore,
        query: str,
        vector_hits: Sequence[tuple[int, float]] | None,
        *,
        max_results: int,
        min_score: float,
        sources: Sequence[str],
    ) -> list[Candidate]:
        """Keyword + vector candidates, fused, decayed, diversified, filtered (spec 4.1).

        ``vector_hits`` are the query's nearest chunks (:meth:`vector_limit` of them), or
        ``None`` when the query has no vector.
        """
        cfg = self.settings.query.hybrid
        limit = candidate_count(max_results, cfg.candidate_multiplier)
        use_fts = cfg.enabled and store.fts_available
        keyword = self.keyword(store, query, limit, sources) if use_fts else []
        _rescale_bm25(keyword)
        vector: list[Candidate] = []
        if vector_hits is not None:
            vector = self.vector(store, vector_hits, limit, sources)
        if not use_fts:
            return [c for c in vector if c.score >= min_score][:max_results]
        return fuse_hybrid(
            vector,
            keyword,
            cfg,
            min_score=min_score,
            max_results=max_results,
            mtime_of=self._mtime,
        )
