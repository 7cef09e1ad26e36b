"""The search pipeline of the builtin backend: keyword, vector, hybrid and keyword-only."""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from memwell.plugin import (
    Calibration,
    Candidate,
    FtsQuery,
    MemwellSettings,
    ScanOutcome,
    SearchRequest,
    blend_file_similarity,
    build_fts_query,
    extract_keywords,
    file_scan_search,
    floor_vector_only,
    fuse_hybrid,
    is_cjk_char,
    measure_coverage,
    rank_keyword_only,
    term_weights,
)
from memwell.plugin_sdk import lazy_module

from .store import IndexStore

if TYPE_CHECKING:
    import numpy as np
    from memwell.plugin import Vector
else:
    np = lazy_module("numpy")

#: At most this many keywords are searched one by one (keyword-only mode's second try).
MAX_KEYWORD_SEARCHES = 16


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


def _cjk_terms_in_no_chunk(store: IndexStore) -> Callable[[frozenset[str]], list[str]] | None:
    """Of a query's terms, the CJK n-grams no chunk holds (document frequency 0), which the
    keyword boost need not look for in each hit. Exact in a schema-3 index: its FTS text and
    the chunks' stored terms are the same n-grams of the same NFC text; the frequencies are
    the ones the query's pruning just read (cached per snapshot)."""
    if not store.cjk_prefixes or store.tokenizer != "unicode61":
        return None

    def absent(terms: frozenset[str]) -> list[str]:
        cjk = [t for t in terms if not t.isascii() and all(map(is_cjk_char, t))]
        if not cjk:
            return []
        frequencies = store.doc_frequencies(cjk, store.chunk_total() // 2 + 1)
        return [t for t in cjk if frequencies.get(t) == 0]

    return absent


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

    def sources(self, request: SearchRequest) -> list[str]:
        """The sources ``request`` searches, in the order of ``settings.sources``."""
        return [s for s in self.settings.sources if s in request.sources]

    @staticmethod
    def _fts(store: IndexStore, query: str) -> FtsQuery | None:
        """The query's FTS5 query for ``store`` (one parse per search: ``query`` is the
        request's :class:`~memwell.plugin.ParsedQuery`)."""
        return build_fts_query(
            query, tokenizer=store.tokenizer, mode="or", cjk_prefixes=store.cjk_prefixes
        )

    def keyword(
        self, store: IndexStore, query: str, limit: int, sources: Sequence[str]
    ) -> list[Candidate]:
        fts = self._fts(store, query)
        if fts is None:
            return []
        if len(fts.terms) > 1 and not fts.like_terms:
            # Terms in more than half of the chunks have an IDF of zero in FTS5's BM25: they
            # cannot change the ranking, only make FTS5 score thousands of extra rows; terms in
            # no chunk match nothing.
            half = store.chunk_total() // 2
            frequencies = store.doc_frequencies(fts.terms, half + 1)
            if not store.fts_available:
                return []
            fts = fts.keeping({t for t, df in frequencies.items() if 0 < df <= half})
        filtered = not set(sources) >= set(self.settings.sources)
        return store.keyword_search(fts, limit, sources, prefetch=limit * 4 if filtered else limit)

    def keyword_only(self, store: IndexStore, request: SearchRequest) -> list[Candidate]:
        """FTS-only mode: BM25 plus the reference's boosts; relaxed floor 0."""
        query, limit, sources = request.query, request.pool, self.sources(request)
        hits = self.keyword(store, query, limit, sources) or self._each_keyword(
            store, query, limit, sources
        )
        return self._rank_keyword_only(hits, request, absent=_cjk_terms_in_no_chunk(store))

    def _each_keyword(
        self, store: IndexStore, query: str, limit: int, sources: Sequence[str]
    ) -> list[Candidate]:
        """Keyword-only mode's second try when the whole query finds nothing: each extracted keyword
        on its own, keeping a chunk's best score (finds CJK single characters, and words next
        to a too-short term that the trigram tokenizer can only AND in)."""
        keywords = extract_keywords(query, trigram=store.tokenizer == "trigram")
        best: dict[str, Candidate] = {}
        for keyword in keywords[:MAX_KEYWORD_SEARCHES]:
            for cand in self.keyword(store, keyword, limit, sources):
                if cand.id not in best or best[cand.id].text_score < cand.text_score:
                    best[cand.id] = cand
        return sorted(best.values(), key=lambda c: -c.text_score)[:limit]

    def _rank_keyword_only(
        self,
        hits: Sequence[Candidate],
        request: SearchRequest,
        absent: Callable[[frozenset[str]], list[str]] | None = None,
    ) -> list[Candidate]:
        return rank_keyword_only(
            hits,
            request.query,
            request.hybrid,
            min_score=request.min_score,
            max_results=request.limit,
            mtime_of=self._mtime,
            absent=absent,
        )

    def file_scan(self, request: SearchRequest) -> tuple[list[Candidate], ScanOutcome]:
        """File-scan mode: the Markdown files scanned directly, ranked like keyword-only hits.

        Only the ``memory`` source is scanned (session transcripts need the index).
        """
        if "memory" not in request.sources:
            return [], ScanOutcome([], 0, ["session transcripts are not scanned"])
        chunking = self.settings.chunking
        outcome = file_scan_search(
            self.workspace,
            request.query,
            limit=request.pool,
            extra_paths=self.settings.extra_paths,
            tokens=chunking.tokens,
            overlap=chunking.overlap,
        )
        return self._rank_keyword_only(outcome.candidates, request), outcome

    def vector_limit(self, request: SearchRequest) -> int:
        """How many nearest chunks :meth:`hybrid` needs from the vector index."""
        filtered = not request.sources >= set(self.settings.sources)
        return request.pool * 2 if filtered else request.pool

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

    def exact_cosines(
        self,
        store: IndexStore,
        keyword: Sequence[Candidate],
        vector: Sequence[Candidate],
        query_vector: Vector,
        model: str,
    ) -> list[Candidate]:
        """The ``keyword`` hits outside the ``vector`` candidates, as vector candidates with
        their exact cosine to ``query_vector`` (best first).

        Without it a keyword hit beyond the nearest chunks fuses as if its cosine were 0, so
        the fused ranking punishes it for a similarity nobody measured; its stored vector
        gives the real one (SciFact train nDCG@10 +0.003, bench/fusion_study.py).
        """
        seen = {c.id for c in vector}
        missing = [c for c in keyword if c.id not in seen]
        vectors = store.vectors_of([c.id for c in missing], model)
        query64 = query_vector.astype(np.float64)
        filled = []
        for cand in missing:
            stored = vectors.get(cand.id)
            if stored is not None and stored.shape == query64.shape:
                cosine = max(0.0, min(1.0, float(stored.astype(np.float64) @ query64)))
                filled.append(replace(cand, vector_score=cosine, text_score=0.0, score=cosine))
        return sorted(filled, key=lambda c: c.vector_score, reverse=True)

    def _measure_coverage(self, store: IndexStore, query: str, keyword: list[Candidate]) -> None:
        """Set the share of the query each ``keyword`` hit covers, which the score floor
        weighs its keyword score by (:mod:`memwell.retrieval.coverage`;
        ``query.hybrid.coverage_power``, 0 off). The trigram tokenizer does not stem, so its
        hits keep coverage 1."""
        if self.settings.query.hybrid.coverage_power <= 0 or not keyword:
            return
        if store.tokenizer != "unicode61":
            return
        fts = self._fts(store, query)
        if fts is None:
            return
        total = store.chunk_total()
        frequencies = store.doc_frequencies(fts.terms, total // 2 + 1)
        measure_coverage(keyword, term_weights(fts.terms, frequencies, total))

    def with_file_similarity(
        self, store: IndexStore, vector: Sequence[Candidate], query_vector: Vector, model: str
    ) -> list[Candidate]:
        """``vector`` with each chunk's cosine blended with its file's mean-vector cosine
        (``query.hybrid.file_weight``; :mod:`memwell.retrieval.file_similarity`)."""
        weight = self.settings.query.hybrid.file_weight
        if weight <= 0 or not vector:
            return list(vector)
        means = store.file_vectors({(c.path, c.source) for c in vector}, model)
        query64 = query_vector.astype(np.float64)
        cosines = {
            key: float(mean.astype(np.float64) @ query64)
            for key, mean in means.items()
            if mean.shape == query64.shape
        }
        return blend_file_similarity(vector, cosines, weight)

    def hybrid(
        self,
        store: IndexStore,
        request: SearchRequest,
        vector_hits: Sequence[tuple[int, float]] | None,
        *,
        calibration: Calibration | None = None,
        query_vector: Vector | None = None,
        model: str | None = None,
    ) -> list[Candidate]:
        """Keyword + vector candidates, fused, decayed, diversified, filtered.

        ``vector_hits`` are the query's nearest chunks (:meth:`vector_limit` of them), or
        ``None`` when the query has no vector; ``calibration`` maps the final scores. With
        the ``query_vector`` and the index's ``model``, keyword hits outside the nearest chunks
        fuse with their exact cosine (:meth:`exact_cosines`) and, with ``file_weight``, every
        cosine is blended with its file's (:meth:`with_file_similarity`).
        """
        cfg, query, limit = request.hybrid, request.query, request.pool
        sources = self.sources(request)
        use_fts = cfg.enabled and store.fts_available
        keyword = self.keyword(store, query, limit, sources) if use_fts else []
        _rescale_bm25(keyword)
        self._measure_coverage(store, query, keyword)
        vector: list[Candidate] = []
        if vector_hits is not None:
            vector = self.vector(store, vector_hits, limit, sources)
            if query_vector is not None and model is not None:
                vector += self.exact_cosines(store, keyword, vector, query_vector, model)
                vector = self.with_file_similarity(store, vector, query_vector, model)
        if not use_fts:
            return floor_vector_only(
                vector,
                min_score=request.min_score,
                max_results=request.limit,
                calibration=calibration,
                query=query,
                query_vector=query_vector,
            )
        return fuse_hybrid(
            vector,
            keyword,
            cfg,
            min_score=request.min_score,
            max_results=request.limit,
            mtime_of=self._mtime,
            calibration=calibration,
            query=query,
            query_vector=query_vector,
        )
