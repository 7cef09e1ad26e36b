"""Temporal decay: older notes score lower; evergreen and vault (pinned) files never decay."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from datetime import date, datetime, timezone

from memwell.contract.layout import VAULT_PREFIX as VAULT_PREFIX
from memwell.retrieval.candidate import Candidate
from memwell.util.lazy_import import lazy_pattern

# A dated note anywhere under ``memory/``: ``YYYY-MM-DD.md``, ``YYYY-MM-DD-<slug>.md`` (session
# notes) or ``<subdir>/YYYY-MM-DD<anything>.md``; a digit right after the date is not a date.
_DATED_MEMORY_PATH = lazy_pattern(
    r"(?:^|/)memory/(?:[^/]+/)*([0-9]{4})-([0-9]{2})-([0-9]{2})(?:[^0-9/][^/]*)?\.md$"
)
_EVERGREEN_ROOT_FILES = frozenset({"MEMORY.md", "memory.md"})
_SECONDS_PER_DAY = 86_400.0


def decay_multiplier(age_days: float, half_life_days: float) -> float:
    """``exp(-ln2 / half_life * age)`` with age clamped to >= 0; 0.5 at the half-life.

    A non-positive or non-finite half-life, or a NaN age, means no decay (1.0).
    """
    age = max(0.0, age_days)
    if math.isnan(age) or not (math.isfinite(half_life_days) and half_life_days > 0):
        return 1.0
    return math.exp(-math.log(2) / half_life_days * age)


def _normalize(path: str) -> str:
    """Use ``/`` separators and drop a leading ``./``."""
    normalized = path.replace("\\", "/")
    return normalized.removeprefix("./")


def date_from_path(path: str) -> date | None:
    """The date in a dated note's name under ``memory/``; None if absent or invalid.

    ``memory/2026-01-15.md``, ``memory/2026-01-15-api-design.md`` and
    ``memory/projects/2026-01-15 retro.md`` all date from 2026-01-15.
    """
    match = _DATED_MEMORY_PATH.search(_normalize(path))
    if match is None:
        return None
    year, month, day = (int(part) for part in match.groups())
    try:
        return date(year, month, day)
    except ValueError:
        return None


def is_pinned(path: str, source: str) -> bool:
    """True for a ``memory``-source file under ``memory/vault/``: the user pinned it."""
    return source == "memory" and _normalize(path).startswith(VAULT_PREFIX)


def is_evergreen(path: str, source: str) -> bool:
    """True for ``memory``-source ``MEMORY.md``, ``memory.md``, undated ``memory/...`` files
    and everything under ``memory/vault/`` (:func:`is_pinned`).

    Outside the vault, a path shaped like a dated note is never evergreen, even with an
    invalid date.
    """
    if source != "memory":
        return False
    normalized = _normalize(path)
    if normalized in _EVERGREEN_ROOT_FILES or is_pinned(normalized, source):
        return True
    return normalized.startswith("memory/") and _DATED_MEMORY_PATH.search(normalized) is None


def _utc_seconds(moment: datetime) -> float:
    """Epoch seconds of ``moment``; a naive datetime is taken as UTC."""
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=timezone.utc)
    return moment.timestamp()


def _timestamp(path: str, source: str, mtime_of: Callable[[str], float | None]) -> float | None:
    """Epoch seconds a hit dates from: None if pinned, its name's date, else None if
    evergreen, else mtime."""
    if is_pinned(path, source):
        return None
    day = date_from_path(path)
    if day is not None:
        return datetime(day.year, day.month, day.day, tzinfo=timezone.utc).timestamp()
    if is_evergreen(path, source):
        return None
    return mtime_of(path)


def apply_temporal_decay(
    items: Sequence[Candidate],
    *,
    half_life_days: float,
    now: datetime,
    mtime_of: Callable[[str], float | None],
) -> list[Candidate]:
    """Multiply each score by its age's :func:`decay_multiplier`, keeping the input order.

    Vault files (:func:`is_pinned`) are never decayed; otherwise the age comes from a dated
    note's name (UTC midnight, see :func:`date_from_path`), else evergreen files are not
    decayed, else ``mtime_of(path)`` (epoch seconds; None means no decay). Timestamps are
    looked up once per ``source:path`` within a call. Returns new candidates.
    """
    now_seconds = _utc_seconds(now)
    cache: dict[tuple[str, str], float | None] = {}
    decayed: list[Candidate] = []
    for item in items:
        key = (item.source, item.path)
        if key not in cache:
            cache[key] = _timestamp(item.path, item.source, mtime_of)
        stamp = cache[key]
        multiplier = 1.0
        if stamp is not None:
            multiplier = decay_multiplier((now_seconds - stamp) / _SECONDS_PER_DAY, half_life_days)
        decayed.append(item.with_score(item.score * multiplier))
    return decayed
