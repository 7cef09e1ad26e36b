"""``memory/meta/decay-scores.json``: the token economy of each memory file (memwell's own
records under ``memory/meta/`` left out).

Per file: its age in days (from a dated note's name, else its modification time), whether it
is pinned (the vault) or evergreen, how often searches recalled it and when last, the tokens
those recalls put in front of the model (the recalled snippets' estimated tokens, once per
recall), and a relevance score in [0, 1]: the temporal decay multiplier (1 for pinned and
evergreen files) times a recall factor from 0.5 (never recalled) to 1 (ten recalls or more).
The content depends only on the files, the recall history and the day, so a second run on
the same day writes the same bytes.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from datetime import date, datetime, timezone

import msgspec

from memwell.context.tokens import EstimatedTokens
from memwell.curation.decay_file import DecayScores, FileScore
from memwell.curation.tracking import RecallEntry
from memwell.retrieval.decay import date_from_path, decay_multiplier, is_evergreen, is_pinned
from memwell.sources.discovery import FoundFile

FULL_RECALLS = 10
"""Recalls at which the recall factor reaches 1."""


def relevance(age_days: float, recalls: int, half_life_days: float, *, decays: bool) -> float:
    """The decay multiplier (when the file decays) times the recall factor, rounded."""
    decay = decay_multiplier(age_days, half_life_days) if decays else 1.0
    factor = 0.5 + 0.5 * min(1.0, math.log1p(recalls) / math.log1p(FULL_RECALLS))
    return round(decay * factor, 4)


def decay_scores(
    files: Sequence[FoundFile],
    recalls: Sequence[RecallEntry],
    *,
    today: date,
    half_life_days: float,
) -> DecayScores:
    """The scores of ``files`` (memory sources) given the recall history ``recalls``."""
    tokens = EstimatedTokens()
    per_path: dict[str, list[RecallEntry]] = {}
    for entry in recalls:
        per_path.setdefault(entry.path, []).append(entry)
    scores: dict[str, FileScore] = {}
    for found in files:
        day = date_from_path(found.path)
        if day is None:
            stamp = datetime.fromtimestamp(found.mtime_ns / 1e9, timezone.utc)
            day = stamp.date()
        age = max(0, (today - day).days)
        pinned = is_pinned(found.path, "memory")
        evergreen = is_evergreen(found.path, "memory")
        entries = per_path.get(found.path, [])
        count = sum(e.recall_count for e in entries)
        last = max((e.last_recalled_at for e in entries), default="") or None
        injected = sum(e.recall_count * tokens.count(e.snippet) for e in entries)
        scores[found.path] = FileScore(
            age_days=age,
            pinned=pinned,
            evergreen=evergreen,
            recall_count=count,
            last_recall=last,
            tokens_injected=injected,
            relevance=relevance(age, count, half_life_days, decays=not evergreen),
        )
    return DecayScores(as_of=today.isoformat(), half_life_days=half_life_days, files=scores)


class DecaySummary(msgspec.Struct, kw_only=True):
    """What ``memwell status`` shows of the scores."""

    as_of: str
    files: int
    pinned: int
    recalls: int
    tokens_injected: int
    mean_relevance: float
    least_relevant: list[str]
    """The three files with the lowest relevance: the first to fade."""


def summary(scores: DecayScores) -> DecaySummary:
    """The summary of ``scores`` for ``memwell status``."""
    files = scores.files
    fading = sorted(files, key=lambda path: (files[path].relevance, path))[:3]
    mean = sum(f.relevance for f in files.values()) / len(files) if files else 0.0
    return DecaySummary(
        as_of=scores.as_of,
        files=len(files),
        pinned=sum(f.pinned for f in files.values()),
        recalls=sum(f.recall_count for f in files.values()),
        tokens_injected=sum(f.tokens_injected for f in files.values()),
        mean_relevance=round(mean, 4),
        least_relevant=fading,
    )
