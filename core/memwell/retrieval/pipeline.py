"""The ranking stages every backend applies after retrieval, in the reference's order.

fuse (weighted or RRF) -> temporal decay -> stable sort -> superseded facts below their
successors -> MMR -> score floor. Backends supply
the candidate lists; these functions make the rest identical everywhere.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Sequence
from dataclasses import replace
from datetime import datetime, timezone
from itertools import islice
from typing import TYPE_CHECKING

from memwell.contract.config import HybridSettings
from memwell.retrieval.boolean import apply_boolean
from memwell.retrieval.calibration import Calibration
from memwell.retrieval.candidate import Candidate
from memwell.retrieval.cjk import other_script
from memwell.retrieval.date_match import boost_dates
from memwell.retrieval.decay import apply_temporal_decay
from memwell.retrieval.dialogue import dialogue_weights
from memwell.retrieval.fts_query import boost_terms, boosted_score, query_terms
from memwell.retrieval.hybrid import merge_rrf, merge_weighted, normalize_weights, relaxed_filter
from memwell.retrieval.mmr import mmr_order
from memwell.retrieval.routing import apply_route
from memwell.retrieval.superseded import demote_superseded

if TYPE_CHECKING:
    from memwell.contract.embeddings import Vector

MtimeOf = Callable[[str], float | None]


def rank_candidates(
    items: Sequence[Candidate], hybrid: HybridSettings, *, mtime_of: MtimeOf, query: str = ""
) -> list[Candidate]:
    """Every candidate in :func:`ranked_order`'s order."""
    return list(ranked_order(items, hybrid, mtime_of=mtime_of, query=query))


def ranked_order(
    items: Sequence[Candidate], hybrid: HybridSettings, *, mtime_of: MtimeOf, query: str = ""
) -> Iterable[Candidate]:
    """The query's ``+must -must_not`` terms (:mod:`memwell.retrieval.boolean`), date-aware
    matching, query routing (:mod:`memwell.retrieval.routing`), temporal decay (when enabled),
    a stable sort by score, superseded facts demoted
    (:func:`~memwell.retrieval.superseded.demote_superseded`), then MMR.

    ``mtime_of`` gives a path's modification time (epoch seconds) for decay of undated files;
    hits in a dated note of a date ``query`` names, and hits that say when to a question
    that asks when, gain ``hybrid.date_boost`` / ``hybrid.when_boost``
    (:func:`~memwell.retrieval.date_match.boost_dates`). With MMR the order is produced
    lazily (:func:`~memwell.retrieval.mmr.mmr_order`): a floor that stops after
    ``max_results`` hits pays for those picks alone.
    """
    ranked = boost_dates(apply_boolean(items, query), query, hybrid.date_boost, hybrid.when_boost)
    ranked = apply_route(ranked, query, hybrid.route_boost)
    if hybrid.temporal_decay.enabled:
        ranked = apply_temporal_decay(
            ranked,
            half_life_days=hybrid.temporal_decay.half_life_days,
            now=datetime.now(timezone.utc),
            mtime_of=mtime_of,
        )
    ranked.sort(key=lambda c: c.score, reverse=True)
    ranked = demote_superseded(ranked, query)
    if hybrid.mmr.enabled:
        return mmr_order(ranked, lambda_=hybrid.mmr.lambda_)
    return ranked


def fuse_hybrid(
    vector: Sequence[Candidate],
    keyword: Sequence[Candidate],
    hybrid: HybridSettings,
    *,
    min_score: float,
    max_results: int,
    mtime_of: MtimeOf,
    calibration: Calibration | None = None,
    query: str = "",
    query_vector: Vector | None = None,
) -> list[Candidate]:
    """Fuse both candidate lists, rank them (:func:`rank_candidates`), then apply the floor.

    With the provider's ``calibration`` and weighted fusion, the ranked scores are mapped
    through :meth:`Calibration.fused_score` (monotone, so the ranking stays) and the floor is
    strict, on each hit's :func:`evidence` rather than its score; otherwise (no calibration, or
    RRF's rank-based scores) the strict-then-relaxed floor of :func:`relaxed_filter` applies.
    Conversation transcripts fuse with their own weights
    (:func:`~memwell.retrieval.dialogue.dialogue_weights`). A keyword hit written in another
    script than the query (:func:`~memwell.retrieval.cjk.other_script`: a shared number or
    name is all it can match) keeps only its vector evidence, and with a multilingual
    ``calibration`` its cosine is placed on the same-script scale (:meth:`Calibration.align`,
    corrected by the query's own distance to that script when its ``query_vector`` is given).
    """
    if calibration is not None:
        vector = calibration.align(vector, query, query_vector)
    hybrid = dialogue_weights(hybrid, vector, keyword)
    keyword = [replace(c, text_score=0.0) if other_script(query, c.text) else c for c in keyword]
    vector_weight, text_weight = normalize_weights(hybrid.vector_weight, hybrid.text_weight)
    if hybrid.fusion == "rrf":
        merged = merge_rrf(
            vector, keyword, k=hybrid.rrf_k, vector_weight=vector_weight, text_weight=text_weight
        )
    else:
        merged = merge_weighted(
            vector, keyword, vector_weight=vector_weight, text_weight=text_weight
        )
    ranked = ranked_order(merged, hybrid, mtime_of=mtime_of, query=query)
    if calibration is not None and hybrid.fusion == "weighted":
        power = hybrid.coverage_power
        kept = (
            c.with_score(calibration.fused_score(c.score, vector_weight))
            for c in ranked
            if calibration.fused_score(
                evidence(c, vector_weight, text_weight, power), vector_weight
            )
            >= min_score
        )
        return list(islice(kept, max(0, max_results)))
    return relaxed_filter(
        list(ranked),
        {c.id for c in keyword},
        min_score=min_score,
        text_weight=text_weight,
        max_results=max_results,
    )


def evidence(
    candidate: Candidate, vector_weight: float, text_weight: float, coverage_power: float
) -> float:
    """How strongly ``candidate`` answers the query, on the fused score's scale: its cosine
    plus its keyword score weighed by ``coverage ** coverage_power`` (the share of the
    query's informative terms it holds; :mod:`~memwell.retrieval.coverage`).

    The score floor judges this, not the ranking score: a date or "when" match reorders hits
    and a note sharing one word of the question still ranks by its BM25, but neither makes
    an unrelated note pass for an answer (issue 43).
    """
    covered = candidate.coverage**coverage_power if coverage_power > 0 else 1.0
    return vector_weight * candidate.vector_score + text_weight * candidate.text_score * covered


def keyword_floor(
    ranked: Iterable[Candidate], min_score: float, max_results: int
) -> list[Candidate]:
    """Keyword-only mode's floor: hits above ``min_score``, else the best anyway.

    Reads ``ranked`` only as far as ``max_results`` passing hits (all of it when fewer pass).
    """
    limit = max(0, max_results)
    if not limit:
        return []
    strict: list[Candidate] = []
    best: list[Candidate] = []
    for c in ranked:
        if len(best) < limit:
            best.append(c)
        if c.score >= min_score:
            strict.append(c)
            if len(strict) == limit:
                break
    return strict or best


def floor_vector_only(
    vector: Sequence[Candidate],
    *,
    min_score: float,
    max_results: int,
    calibration: Calibration | None,
    query: str = "",
    query_vector: Vector | None = None,
) -> list[Candidate]:
    """Vector-only mode's floor: with the provider's ``calibration``, each cosine aligned
    across scripts (:meth:`Calibration.align`) and mapped to the calibrated scale, as
    :func:`fuse_hybrid` maps fused scores, so ``min_score`` means the same in both modes;
    without one, raw cosines."""
    if calibration is not None:
        vector = [
            c.with_score(calibration.score(c.score))
            for c in calibration.align(vector, query, query_vector)
        ]
    return [c for c in vector if c.score >= min_score][: max(0, max_results)]


def rank_keyword_only(
    hits: Sequence[Candidate],
    query: str,
    hybrid: HybridSettings,
    *,
    min_score: float,
    max_results: int,
    mtime_of: MtimeOf,
    absent: Callable[[frozenset[str]], Collection[str]] | None = None,
) -> list[Candidate]:
    """Keyword-only mode: text score plus the reference's boosts, ranked, floored.

    Used for FTS hits and for file-scan hits alike, so both rank the same way. ``absent``
    gives, of the query's terms, those the index holds in no chunk: they are not looked for
    in each hit (:func:`~memwell.retrieval.fts_query.boosted_score`).
    """
    terms = query_terms(query)  # once per query, not per candidate
    looking = boost_terms(terms, absent(terms) if absent is not None else ())
    boosted = [
        c.with_score(boosted_score(looking, c.text_score, c.text, c.path, c.terms)) for c in hits
    ]
    return keyword_floor(
        ranked_order(boosted, hybrid, mtime_of=mtime_of, query=query), min_score, max_results
    )
