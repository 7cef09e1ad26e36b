"""The file format of ``memory/meta/decay-scores.json`` and the relevance promotion reads.

:mod:`memwell.organise.decay_scores` computes the scores (``memwell reflect`` writes them);
this module only knows the format, so curation can read it without importing organise.
"""

from __future__ import annotations

from pathlib import Path

import msgspec

from memwell.writing.audit import META_DIR

SCORES_NAME = "decay-scores.json"
SCORES_PATH = f"{META_DIR}/{SCORES_NAME}"


class FileScore(msgspec.Struct, kw_only=True):
    """One memory file's entry."""

    age_days: int
    pinned: bool
    evergreen: bool
    recall_count: int
    last_recall: str | None
    tokens_injected: int
    relevance: float


class DecayScores(msgspec.Struct, kw_only=True):
    """The whole file: the day it was computed, the half-life used, the files."""

    generated: str = "memwell reflect"
    as_of: str
    half_life_days: float
    files: dict[str, FileScore]


def encode(scores: DecayScores) -> bytes:
    """The file's bytes: indented JSON, keys in a fixed order, a final newline."""
    return msgspec.json.format(msgspec.json.encode(scores), indent=2) + b"\n"


def read_scores(path: Path) -> DecayScores | None:
    """The scores last written to ``path``; None when missing or unreadable."""
    try:
        return msgspec.json.decode(path.read_bytes(), type=DecayScores)
    except (OSError, msgspec.DecodeError):
        return None


def file_relevance(workspace: Path) -> dict[str, float]:
    """Each scored file's relevance, clamped to [0, 1]; empty when the workspace has no
    readable scores (never run reflect, or the file is broken)."""
    scores = read_scores(workspace / SCORES_PATH)
    if scores is None:
        return {}
    return {path: min(1.0, max(0.0, f.relevance)) for path, f in scores.files.items()}
