"""Fusion of keyword and vector hits: weighted sum, reciprocal-rank fusion, relaxed filtering."""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import replace

from memwell.retrieval.candidate import Candidate

DEFAULT_VECTOR_WEIGHT = 0.7
DEFAULT_TEXT_WEIGHT = 0.3


def clamp01(value: float) -> float:
    """Clamp ``value`` into [0, 1]; NaN becomes 0."""
    return min(1.0, max(0.0, value))


def normalize_weights(vector_weight: float, text_weight: float) -> tuple[float, float]:
    """Clamp both weights to [0, 1] and scale them to sum to 1 (both 0 gives 0.7/0.3)."""
    vector, text = clamp01(vector_weight), clamp01(text_weight)
    total = vector + text
    if total == 0:
        return DEFAULT_VECTOR_WEIGHT, DEFAULT_TEXT_WEIGHT
    return vector / total, text / total


def _first_by_id(items: Sequence[Candidate]) -> dict[str, Candidate]:
    """Index ``items`` by id in input order, keeping the first occurrence of each id."""
    by_id: dict[str, Candidate] = {}
    for item in items:
        by_id.setdefault(item.id, item)
    return by_id


def _union(vector: dict[str, Candidate], keyword: dict[str, Candidate]) -> dict[str, Candidate]:
    """Union by id (vector hits first) with both partial scores; keyword text wins if non-empty."""
    merged = {cid: replace(c, text_score=0.0) for cid, c in vector.items()}
    for cid, hit in keyword.items():
        base = merged.get(cid)
        if base is None:
            merged[cid] = replace(hit, vector_score=0.0)
        else:
            merged[cid] = replace(
                base, text_score=hit.text_score, coverage=hit.coverage, text=hit.text or base.text
            )
    return merged


def _by_score(items: Collection[Candidate]) -> list[Candidate]:
    """Stable sort by descending score."""
    return sorted(items, key=lambda c: c.score, reverse=True)


def merge_weighted(
    vector: Sequence[Candidate],
    keyword: Sequence[Candidate],
    *,
    vector_weight: float,
    text_weight: float,
) -> list[Candidate]:
    """Merge hits by id with ``score = w_v * vector_score + w_t * text_score``.

    Weights go through :func:`normalize_weights`. Returns new candidates sorted by score
    (descending, stable: vector order first, then keyword-only hits).
    """
    w_vector, w_text = normalize_weights(vector_weight, text_weight)
    merged = _union(_first_by_id(vector), _first_by_id(keyword)).values()
    return _by_score(
        [c.with_score(w_vector * c.vector_score + w_text * c.text_score) for c in merged]
    )


def merge_rrf(
    vector: Sequence[Candidate],
    keyword: Sequence[Candidate],
    *,
    k: int = 60,
    vector_weight: float = 1.0,
    text_weight: float = 1.0,
) -> list[Candidate]:
    """Reciprocal-rank fusion: ``sum w / (k + rank)`` over both lists, rescaled into [0, 1].

    Ranks are 1-based positions in each list; the score is divided by the best possible
    fused score, so a hit ranked first in both lists scores 1.0. Weights go through
    :func:`normalize_weights`; ``vector_score``/``text_score`` are kept from the inputs.
    """
    if k < 0:
        raise ValueError(f"RRF k must be >= 0, got {k}")
    w_vector, w_text = normalize_weights(vector_weight, text_weight)
    vector_hits, keyword_hits = _first_by_id(vector), _first_by_id(keyword)
    vector_rank = {cid: rank for rank, cid in enumerate(vector_hits, start=1)}
    keyword_rank = {cid: rank for rank, cid in enumerate(keyword_hits, start=1)}

    def fused(cid: str) -> float:
        total = 0.0
        if cid in vector_rank:
            total += w_vector / (k + vector_rank[cid])
        if cid in keyword_rank:
            total += w_text / (k + keyword_rank[cid])
        return clamp01(total * (k + 1))

    merged = _union(vector_hits, keyword_hits)
    return _by_score([c.with_score(fused(cid)) for cid, c in merged.items()])


def relaxed_filter(
    merged: Sequence[Candidate],
    keyword_ids: Collection[str],
    *,
    min_score: float,
    text_weight: float,
    max_results: int,
) -> list[Candidate]:
    """Apply ``min_score`` to merged hits, rescuing single-retriever hits when nothing passes.

    Strict: hits with ``score >= min_score``, returned (capped at ``max_results``) when any
    survive. Otherwise fusion has diluted every hit below the floor, and the rescue keeps
    keyword hits whose score is ``>= min(min_score, text_weight)`` (a pure keyword
    hit scores at most the normalised ``text_weight``) and, by the same reasoning for the other
    retriever, hits whose own ``vector_score`` reaches ``min_score`` (small local models give
    relevant passages cosines of 0.35-0.6, which weighting by 0.7 pushes under 0.35).
    """
    limit = max(0, max_results)
    strict = [c for c in merged if c.score >= min_score]
    if strict:
        return strict[:limit]
    floor = min(min_score, text_weight)
    return [
        c
        for c in merged
        if (c.id in keyword_ids and c.score >= floor) or c.vector_score >= min_score
    ][:limit]
