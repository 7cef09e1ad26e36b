"""Promotion: recalled daily-note snippets that keep coming back are copied into MEMORY.md.

The port of the reference's short-term promotion. Each tracked chunk of a daily note
(``memory/YYYY-MM-DD.md``, ``memory/YYYY-MM-DD-<slug>.md``) that was not promoted yet is scored
from its recall history (:mod:`memwell.curation.tracking`), with ``signals`` = recalls +
grounded reads:

============== ====== ================================================================
component      weight value
============== ====== ================================================================
frequency      0.24   ``log1p(signals) / log1p(10)``
relevance      0.30   mean score, ``total_score / signals``
diversity      0.15   ``max(distinct queries, recall days) / 5``
recency        0.15   ``exp(-ln 2 / half_life * days since the last recall)``, 14-day half-life
consolidation  0.10   the larger of the recall days' spacing and span (one day: 0.2; else
                      ``0.55 * log1p(days - 1) / log1p(4) + 0.45 * span_days / 7``) and
                      ``grounded / 3``
conceptual     0.06   ``concept tags / 6``
============== ====== ================================================================

Every component is clamped to [0, 1] and the weights (``[promotion.weights]``) are normalised
to sum to 1. A candidate needs ``signals >= min_recall_count`` (3), ``max(distinct queries,
recall days) >= min_unique_queries`` (2) and a score of at least ``min_score`` (0.75); it is
then ranked by score, recall count, path.

:func:`promote` appends the chosen snippets to ``MEMORY.md`` through the memory writer, under
``## Promoted From Short-Term Memory (YYYY-MM-DD)``, one bullet each with its score and source
``path:start-end``, preceded by a ``<!-- memwell-promotion:<key> -->`` marker. A snippet whose
marker or text is in ``MEMORY.md`` already is never appended again, and promoted chunks are
marked in the sidecar, so running it twice appends once.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import date, datetime
from pathlib import Path

import msgspec

from ..config import MemwellSettings, PromotionSettings, PromotionWeights
from ..manager import MemorySearchManager
from ..records import Record
from ..sources.paths import read_memory_file
from ..writing.atomic import write_lock
from ..writing.audit import Channel
from ..writing.writer import MemoryWriter
from .tracking import Clock, RecallEntry, RecallTracker

SECTION_TITLE = "Promoted From Short-Term Memory"
MARKER_PREFIX = "memwell-promotion:"
LOCK_FILE_NAME = "promotion.lock"
_DAY_S = 86_400.0
_DAILY_NOTE = re.compile(r"(?:^|/)memory/(?:[^/]+/)*\d{4}-\d{2}-\d{2}(?:-[^/]+)?\.md$")
_MARKER = re.compile(r"<!--\s*" + re.escape(MARKER_PREFIX) + r"(.+?)\s*-->")
_WHITESPACE = re.compile(r"\s+")
_HEADING = re.compile(r"^\s{0,3}#{1,6}(?:\s|$)")
COMPONENTS = ("frequency", "relevance", "diversity", "recency", "consolidation", "conceptual")


def is_daily_note(path: str) -> bool:
    """Whether ``path`` is a daily note (the reference's short-term memory)."""
    return _DAILY_NOTE.search(path) is not None


def normalize_snippet(text: str) -> str:
    """Whitespace runs collapsed to one space, ends stripped."""
    return _WHITESPACE.sub(" ", text).strip()


def promoted_text(snippet: str) -> str:
    """What a bullet says: the snippet without its Markdown headings, on one line."""
    return normalize_snippet("\n".join(s for s in snippet.splitlines() if not _HEADING.match(s)))


def _clamp(value: float) -> float:
    return max(0.0, min(1.0, value)) if math.isfinite(value) else 0.0


def _parse_time(stamp: str) -> datetime | None:
    try:
        return datetime.fromisoformat(stamp.replace("Z", "+00:00"))
    except ValueError:
        return None


def consolidation_component(recall_days: Sequence[str]) -> float:
    """How spread out the recall days are (the reference's spacing and span)."""
    days = sorted(d for d in (_parse_day(v) for v in recall_days) if d is not None)
    if not days:
        return 0.0
    if len(days) == 1:
        return 0.2
    spacing = _clamp(math.log1p(len(days) - 1) / math.log1p(4))
    span = _clamp((days[-1] - days[0]).days / 7)
    return _clamp(0.55 * spacing + 0.45 * span)


def _parse_day(value: str) -> date | None:
    try:
        return date.fromisoformat(value[:10])
    except ValueError:
        return None


def normalized_weights(weights: PromotionWeights) -> dict[str, float]:
    """The weights scaled to sum to 1 (the defaults if they are all 0)."""
    raw = {name: max(0.0, getattr(weights, name)) for name in COMPONENTS}
    total = sum(raw.values())
    if total <= 0:
        return normalized_weights(PromotionWeights())
    return {name: value / total for name, value in raw.items()}


class PromotionCandidate(Record, kw_only=True):
    """A ranked chunk: its history, each component and the weighted score."""

    key: str
    path: str
    start_line: int
    end_line: int
    snippet: str
    score: float
    components: dict[str, float]
    recall_count: int
    grounded_count: int
    daily_count: int
    signal_count: int
    avg_score: float
    max_score: float
    unique_queries: int
    recall_days: list[str]
    concept_tags: list[str]
    age_days: float
    last_recalled_at: str
    promoted_at: str | None = None

    @property
    def source(self) -> str:
        """``path:start-end``."""
        return f"{self.path}:{self.start_line}-{self.end_line}"


def score_entry(
    entry: RecallEntry, settings: PromotionSettings, now: datetime
) -> PromotionCandidate | None:
    """The entry as a candidate, or ``None`` if it fails a gate."""
    signals = entry.signal_count
    if signals <= 0 or signals < settings.min_recall_count:
        return None
    unique_queries = len(entry.query_hashes)
    context = max(unique_queries, len(entry.recall_days))
    if context < settings.min_unique_queries:
        return None
    last = _parse_time(entry.last_recalled_at)
    age = max(0.0, (now - last).total_seconds() / _DAY_S) if last is not None else 0.0
    if settings.max_age_days is not None and age > settings.max_age_days:
        return None
    avg = _clamp(entry.total_score / max(1, signals))
    components = {
        "frequency": _clamp(math.log1p(signals) / math.log1p(10)),
        "relevance": avg,
        "diversity": _clamp(context / 5),
        "recency": _clamp(math.exp(-math.log(2) / settings.recency_half_life_days * age)),
        "consolidation": max(
            consolidation_component(entry.recall_days), _clamp(entry.grounded_count / 3)
        ),
        "conceptual": _clamp(len(entry.concept_tags) / 6),
    }
    weights = normalized_weights(settings.weights)
    score = sum(weights[name] * components[name] for name in COMPONENTS)
    if score < settings.min_score:
        return None
    return PromotionCandidate(
        key=entry.key,
        path=entry.path,
        start_line=entry.start_line,
        end_line=entry.end_line,
        snippet=entry.snippet,
        score=_clamp(score),
        components=components,
        recall_count=entry.recall_count,
        grounded_count=entry.grounded_count,
        daily_count=entry.daily_count,
        signal_count=signals,
        avg_score=avg,
        max_score=entry.max_score,
        unique_queries=unique_queries,
        recall_days=entry.recall_days,
        concept_tags=entry.concept_tags,
        age_days=age,
        last_recalled_at=entry.last_recalled_at,
        promoted_at=entry.promoted_at,
    )


def rank_candidates(
    entries: Iterable[RecallEntry],
    settings: PromotionSettings,
    now: datetime,
    *,
    include_promoted: bool = False,
) -> list[PromotionCandidate]:
    """Daily-note chunks that pass every gate, best first (score, recalls, path)."""
    ranked = [
        candidate
        for entry in entries
        if entry.source == "memory"
        and is_daily_note(entry.path)
        and promoted_text(entry.snippet)
        and (include_promoted or entry.promoted_at is None)
        and (candidate := score_entry(entry, settings, now)) is not None
    ]
    return sorted(ranked, key=lambda c: (-c.score, -c.recall_count, c.path))


class SkippedCandidate(Record, kw_only=True):
    """A qualified candidate that was not appended, and why."""

    key: str
    source: str
    reason: str


class PromotionResult(Record, kw_only=True):
    """What :func:`promote` did: the ranking, what it appended, what it skipped."""

    dry_run: bool
    memory_file: str
    heading: str
    candidates: list[PromotionCandidate]
    appended: list[PromotionCandidate] = msgspec.field(default_factory=list)
    skipped: list[SkippedCandidate] = msgspec.field(default_factory=list)


def bullet(candidate: PromotionCandidate, text: str) -> str:
    """The marker line and the bullet of one promoted snippet."""
    return (
        f"<!-- {MARKER_PREFIX}{candidate.key} -->\n"
        f"- {text} [score={candidate.score:.3f} recalls={candidate.recall_count} "
        f"avg={candidate.avg_score:.3f} source={candidate.source}]"
    )


def _relocate(lines: Sequence[str], target: str, start: int) -> tuple[int, int] | None:
    """The line range whose text (headings left out) begins with ``target`` (nearest to
    ``start``), if any."""
    found: list[tuple[int, int]] = []
    for first in range(len(lines)):
        if not lines[first].strip() or _HEADING.match(lines[first]):
            continue
        text = ""
        for last in range(first, len(lines)):
            if _HEADING.match(lines[last]):
                continue
            text = normalize_snippet(f"{text} {lines[last]}")
            if text.startswith(target):
                found.append((first + 1, last + 1))
                break
            if not target.startswith(text):
                break
    return min(found, key=lambda r: abs(r[0] - start)) if found else None


@dataclass
class _Workspace:
    root: Path
    settings: MemwellSettings
    memory_text: str = ""
    markers: set[str] = field(default_factory=set)

    def read(self, rel_path: str) -> str:
        return read_memory_file(self.root, rel_path, extra_paths=self.settings.extra_paths).text


def _rehydrate(
    ws: _Workspace, candidate: PromotionCandidate, target: str
) -> PromotionCandidate | None:
    """The candidate at the lines of the source file that now hold ``target`` (its
    :func:`promoted_text`), or ``None`` if they are gone."""
    lines = ws.read(candidate.path).splitlines()
    span = _relocate(lines, target, candidate.start_line)
    if span is None:
        return None
    return candidate.model_copy(update={"start_line": span[0], "end_line": span[1]})


def promote(
    manager: MemorySearchManager,
    workspace: Path,
    settings: MemwellSettings,
    *,
    tracker: RecallTracker | None = None,
    dry_run: bool = False,
    limit: int | None = None,
    include_promoted: bool = False,
    clock: Clock | None = None,
    channel: Channel = "api",
) -> PromotionResult:
    """Rank the recalled daily-note snippets and (unless ``dry_run``) append the qualified
    ones to ``MEMORY.md``; see the module docstring.

    :param manager: the workspace's memory (synced by the writer after the append).
    :param tracker: the recall sidecar (default: the manager's, else the workspace's).
    :param limit: promote at most this many (default: every qualified candidate).
    :param include_promoted: rank chunks promoted before as well (``dry_run`` only shows
        them; they are never appended twice).
    :param clock: the current time (default: now, local time).
    :param channel: the audit log's channel for the append (``cli`` from the command).
    :raises sqlite3.Error: the sidecar cannot be read.
    """
    now = (clock or (lambda: datetime.now().astimezone()))()
    known = tracker or getattr(manager, "tracker", None)
    store = known if isinstance(known, RecallTracker) else None
    own = store is None
    store = store or RecallTracker.for_workspace(workspace, settings)
    try:
        writer = MemoryWriter(manager, workspace, settings, clock=lambda: now, channel=channel)
        return _promote(writer, store, now, dry_run, limit, include_promoted)
    finally:
        if own:
            store.close()


def _promote(
    writer: MemoryWriter,
    store: RecallTracker,
    now: datetime,
    dry_run: bool,
    limit: int | None,
    include_promoted: bool,
) -> PromotionResult:
    workspace, settings = writer.workspace, writer.settings
    heading = f"{SECTION_TITLE} ({now.date().isoformat()})"
    lock = workspace / settings.index_dir / LOCK_FILE_NAME
    with write_lock(lock, settings.write.lock_timeout_seconds):
        ranked = rank_candidates(
            store.entries(), settings.promotion, now, include_promoted=include_promoted
        )
        chosen = ranked[:limit] if limit is not None else ranked
        memory_file = writer.root_file()
        ws = _Workspace(workspace, settings)
        ws.memory_text = ws.read(memory_file)
        ws.markers = set(_MARKER.findall(ws.memory_text))
        result = PromotionResult(
            dry_run=dry_run, memory_file=memory_file, heading=heading, candidates=ranked
        )
        if dry_run:
            return result
        blocks, present = _select(ws, chosen, result)
        if blocks:
            with writer.audited_as("promote"):
                writer.append("\n".join(blocks), heading=heading)
        store.mark_promoted([c.key for c in result.appended] + present)
    return result


def _select(
    ws: _Workspace, chosen: Sequence[PromotionCandidate], result: PromotionResult
) -> tuple[list[str], list[str]]:
    """The bullets to append (filling ``result``), and the keys already in MEMORY.md."""
    existing = normalize_snippet(ws.memory_text)
    blocks: list[str] = []
    present: list[str] = []
    for candidate in chosen:
        text = promoted_text(candidate.snippet)
        if candidate.key in ws.markers or text in existing:
            present.append(candidate.key)
            result.skipped.append(
                SkippedCandidate(
                    key=candidate.key, source=candidate.source, reason="already in MEMORY.md"
                )
            )
            continue
        current = _rehydrate(ws, candidate, text)
        if current is None:
            result.skipped.append(
                SkippedCandidate(
                    key=candidate.key,
                    source=candidate.source,
                    reason="the snippet is no longer in its file",
                )
            )
            continue
        blocks.append(bullet(current, text))
        result.appended.append(current)
    return blocks, present
