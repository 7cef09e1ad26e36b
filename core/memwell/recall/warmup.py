"""Time-of-day warm-up: the questions a morning (afternoon, evening, night) usually asks,
learned from the recall sidecar's query log (:mod:`memwell.curation.query_log`).

A query is usual for a part of the day when it was asked in that part on at least
``[cache.recall] warm_min_days`` distinct days; the most usual come first (more days, then more
times, then the latest asked). Queries are grouped as the recall cache's exact tier groups them,
ignoring case. :meth:`~memwell.recall.manager.RecallCachedManager.warm_for` answers them into
the recall cache, so that part of the day's first searches are cache hits.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Literal, get_args

import msgspec

from memwell.curation.query_log import AskedQuery
from memwell.recall.store import normalise_query

Period = Literal["morning", "afternoon", "evening", "night"]
PERIODS: tuple[str, ...] = get_args(Period)
HOURS: dict[str, frozenset[int]] = {
    "morning": frozenset(range(5, 12)),
    "afternoon": frozenset(range(12, 17)),
    "evening": frozenset(range(17, 22)),
    "night": frozenset({22, 23, 0, 1, 2, 3, 4}),
}
"""The local hours of each part of the day."""


def period_of(moment: datetime) -> Period:
    """The part of the day ``moment`` (local time) falls in."""
    return next(p for p in get_args(Period) if moment.hour in HOURS[p])


def check_period(period: str) -> Period:
    """``period`` if it names a part of the day; else a :class:`ValueError` naming them."""
    if period not in PERIODS:
        raise ValueError(f"the part of the day must be one of {', '.join(PERIODS)}; got {period!r}")
    return period  # type: ignore[return-value]


class UsualQuery(msgspec.Struct, frozen=True):
    """A query the part of the day usually asks: its latest wording, on how many distinct
    days and how many times it was asked then."""

    query: str
    days: int
    times: int


class WarmUp(msgspec.Struct, kw_only=True):
    """What :meth:`~memwell.recall.manager.RecallCachedManager.warm_for` did."""

    period: str
    queries: list[UsualQuery]
    cached: int
    """How many of them the recall cache now holds an answer for (none while caching is off)."""
    millis: float


def usual_queries(asked: Sequence[AskedQuery], *, limit: int, min_days: int) -> list[UsualQuery]:
    """The ``limit`` most usual queries of ``asked`` (see the module docstring)."""

    wording: dict[str, str] = {}
    days: dict[str, set[str]] = {}
    times: dict[str, int] = {}
    latest: dict[str, str] = {}
    for row in asked:
        key = normalise_query(row.query).casefold()
        if not key:
            continue
        wording[key] = row.query
        days.setdefault(key, set()).add(row.day)
        times[key] = times.get(key, 0) + 1
        latest[key] = max(latest.get(key, ""), row.at)
    kept = sorted((k for k in wording if len(days[k]) >= min_days), key=latest.__getitem__)
    kept.reverse()  # the latest asked first among equals: the sort below is stable
    kept.sort(key=lambda k: (-len(days[k]), -times[k]))
    return [UsualQuery(wording[k], len(days[k]), times[k]) for k in kept[:limit]]
