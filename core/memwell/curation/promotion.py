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
then ranked by score, recall count, path. When ``memwell reflect`` has written
``memory/meta/decay-scores.json`` (:mod:`memwell.curation.decay_file`), the ranking score is
``score + 0.05 * relevance`` of the candidate's file (a file the scores do not list counts as
new and never recalled: 0.5), so of two close candidates the one from the file that stays
relevant comes first; the gates use the score alone, and a missing or broken file changes
nothing.

:func:`promote` then takes, of each chosen chunk, only the lines searches actually matched
(the tracker's line-level evidence): a line needs ``min_recall_count`` recalls by
``min_unique_queries`` distinct queries of its own. It appends them to ``MEMORY.md`` through
the memory writer under ``## Promoted From Short-Term Memory (YYYY-MM-DD)``, one bullet per
source line in the source's own form (:mod:`memwell.curation.promoted_lines`), leaving out
lines MEMORY.md already says (also near-duplicates and superseded facts) and superseded lines.
Scores and sources stay out of MEMORY.md: they go to the sidecar
(:mod:`memwell.curation.promotion_undo`), with the file's bytes before, so that
:func:`~memwell.curation.promotion_undo.undo_last` restores it byte for byte. A promotion only
ever adds lines; running it twice appends once.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import date, datetime
from pathlib import Path

import msgspec

from memwell.contract.config import MemwellSettings, PromotionSettings, PromotionWeights
from memwell.contract.errors import MemwellError
from memwell.contract.manager import MemorySearchManager
from memwell.contract.records import Record
from memwell.curation.decay_file import file_relevance
from memwell.curation.promoted_lines import MemoryLines, as_bullet
from memwell.curation.promotion_undo import PromotedLine, UndoResult, save_undo, undo_last
from memwell.curation.tracking import Clock, RecallEntry, RecallTracker
from memwell.retrieval.supersede_marker import parse_superseded
from memwell.sources.paths import read_memory_file
from memwell.writing.atomic import FileState, read_state, replace_file, write_lock
from memwell.writing.audit import Channel
from memwell.writing.targets import resolve_write_path
from memwell.writing.writer import MemoryWriter

SECTION_TITLE = "Promoted From Short-Term Memory"
MARKER_PREFIX = "memwell-promotion:"
LOCK_FILE_NAME = "promotion.lock"
_DAY_S = 86_400.0
_DAILY_NOTE = re.compile(r"(?:^|/)memory/(?:[^/]+/)*\d{4}-\d{2}-\d{2}(?:-[^/]+)?\.md$")
_MARKER = re.compile(r"<!--\s*" + re.escape(MARKER_PREFIX) + r"(.+?)\s*-->")
_WHITESPACE = re.compile(r"\s+")
_HEADING = re.compile(r"^\s{0,3}#{1,6}(?:\s|$)")
COMPONENTS = ("frequency", "relevance", "diversity", "recency", "consolidation", "conceptual")
FILE_RELEVANCE_WEIGHT = 0.05
"""How much a file's decay-score relevance adds to a candidate's ranking score."""
UNSCORED_RELEVANCE = 0.5
"""The relevance of a file the decay scores do not list (new and never recalled)."""


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
    relevance: Mapping[str, float] | None = None,
) -> list[PromotionCandidate]:
    """Daily-note chunks that pass every gate, best first (ranking score, recalls, path).

    :param relevance: each file's decay-score relevance (:func:`file_relevance`); empty or
        None ranks by the score alone.
    """
    ranked = [
        candidate
        for entry in entries
        if entry.source == "memory"
        and is_daily_note(entry.path)
        and promoted_text(entry.snippet)
        and (include_promoted or entry.promoted_at is None)
        and (candidate := score_entry(entry, settings, now)) is not None
    ]

    def ranking_score(candidate: PromotionCandidate) -> float:
        """The score plus the file relevance's small, bounded share (see the module docstring)."""
        if not relevance:
            return candidate.score
        file = relevance.get(candidate.path, UNSCORED_RELEVANCE)
        return candidate.score + FILE_RELEVANCE_WEIGHT * file

    return sorted(ranked, key=lambda c: (-ranking_score(c), -c.recall_count, c.path))


class SkippedCandidate(Record, kw_only=True):
    """A qualified candidate that was not appended, and why."""

    key: str
    source: str
    reason: str


class PromotionResult(Record, kw_only=True):
    """What :func:`promote` did: the ranking, the chunks it appended lines of, what it
    skipped, and ``lines``: exactly the lines written (or, for a dry run, that would be)."""

    dry_run: bool
    memory_file: str
    heading: str
    candidates: list[PromotionCandidate]
    appended: list[PromotionCandidate] = msgspec.field(default_factory=list)
    skipped: list[SkippedCandidate] = msgspec.field(default_factory=list)
    lines: list[PromotedLine] = msgspec.field(default_factory=list)


@dataclass
class _Workspace:
    root: Path
    settings: MemwellSettings
    memory: MemoryLines = field(default_factory=lambda: MemoryLines(""))
    markers: set[str] = field(default_factory=set)
    files: dict[str, list[str]] = field(default_factory=dict)

    def lines(self, rel_path: str) -> list[str]:
        if rel_path not in self.files:
            text = read_memory_file(self.root, rel_path, extra_paths=self.settings.extra_paths).text
            self.files[rel_path] = text.splitlines()
        return self.files[rel_path]


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
    writer = MemoryWriter(manager, workspace, settings, clock=lambda: now, channel=channel)
    with _sidecar(manager, workspace, settings, tracker) as store:
        return _promote(writer, store, now, dry_run, limit, include_promoted)


@contextmanager
def _sidecar(
    manager: MemorySearchManager,
    workspace: Path,
    settings: MemwellSettings,
    tracker: RecallTracker | None,
) -> Iterator[RecallTracker]:
    """``tracker``, else the manager's, else the workspace's (closed after use)."""
    known = tracker or getattr(manager, "tracker", None)
    if isinstance(known, RecallTracker):
        yield known
        return
    store = RecallTracker.for_workspace(workspace, settings)
    try:
        yield store
    finally:
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
        entries = store.entries()
        relevance = file_relevance(workspace)
        ranked = rank_candidates(
            entries,
            settings.promotion,
            now,
            include_promoted=include_promoted,
            relevance=relevance,
        )
        every = rank_candidates(
            entries, settings.promotion, now, include_promoted=True, relevance=relevance
        )
        chosen = every[:limit] if limit is not None else every
        memory_file = writer.root_file()
        ws = _Workspace(workspace, settings)
        memory_text = _read(ws, memory_file)
        ws.memory = MemoryLines(memory_text)
        ws.markers = set(_MARKER.findall(memory_text))
        result = PromotionResult(
            dry_run=dry_run, memory_file=memory_file, heading=heading, candidates=ranked
        )
        by_key = {entry.key: entry for entry in entries}
        _select(ws, chosen, by_key, settings.promotion, result)
        if dry_run or not result.lines:
            return result
        real, _ = resolve_write_path(workspace, memory_file)
        before = read_state(real)
        with writer.audited_as("promote"):
            writer.append(
                "\n".join(line.text for line in result.lines), heading=heading, supersede=False
            )
        after = read_state(real)
        _check_kept(real, before.data, after)
        save_undo(
            workspace,
            settings,
            memory_file,
            before.data if before.exists else None,
            after.data,
            result.lines,
            now,
        )
        store.mark_promoted([c.key for c in result.appended])
    return result


def _read(ws: _Workspace, rel_path: str) -> str:
    return "\n".join(ws.lines(rel_path))


def _check_kept(real: Path, before: bytes, after: FileState) -> None:
    """Undo the append (and raise) if any line the file had before is gone from it."""
    had = Counter(before.decode("utf-8", "surrogateescape").splitlines())
    has = Counter(after.data.decode("utf-8", "surrogateescape").splitlines())
    if had - has:
        replace_file(real, before, after)
        raise MemwellError("the promotion would have removed lines from MEMORY.md; undone")


def _source_line(ws: _Workspace, path: str, number: int, text: str) -> int | None:
    """Where the line recorded as ``text`` at ``number`` of ``path`` is now, if anywhere."""
    lines = ws.lines(path)
    if 0 < number <= len(lines) and lines[number - 1] == text:
        return number
    same = [i for i, line in enumerate(lines, start=1) if line == text]
    return same[0] if len(same) == 1 else None


def _skip(result: PromotionResult, key: str, source: str, reason: str) -> None:
    result.skipped.append(SkippedCandidate(key=key, source=source, reason=reason))


def _select(
    ws: _Workspace,
    chosen: Sequence[PromotionCandidate],
    entries: dict[str, RecallEntry],
    gates: PromotionSettings,
    result: PromotionResult,
) -> None:
    """Fill ``result.lines`` (and ``appended`` / ``skipped``) with the recalled lines of
    ``chosen`` that qualify and that MEMORY.md does not say yet."""
    for candidate in chosen:
        if candidate.key in ws.markers:
            _skip(result, candidate.key, candidate.source, "already in MEMORY.md")
        elif not entries[candidate.key].line_hits:
            reason = "no line-level recall evidence yet (recorded before lines were tracked)"
            _skip(result, candidate.key, candidate.source, reason)
        elif _select_lines(ws, candidate, entries[candidate.key], gates, result):
            result.appended.append(candidate)


def _select_lines(
    ws: _Workspace,
    candidate: PromotionCandidate,
    entry: RecallEntry,
    gates: PromotionSettings,
    result: PromotionResult,
) -> bool:
    """Add the qualifying recalled lines of one chunk to ``result``; whether any was."""
    added = False
    for number_text, line in sorted(entry.line_hits.items(), key=lambda item: int(item[0])):
        if line.count < gates.min_recall_count or len(line.queries) < gates.min_unique_queries:
            continue
        number = _source_line(ws, candidate.path, int(number_text), line.text)
        source = f"{candidate.path}#L{number or number_text}"
        if number is None:
            _skip(result, candidate.key, source, "the line is no longer in its file")
            continue
        if parse_superseded(line.text) is not None:
            _skip(result, candidate.key, source, "the line is superseded in its file")
            continue
        text = as_bullet(line.text)
        reason = ws.memory.why_not(text)
        if reason is not None:
            _skip(result, candidate.key, source, reason)
            continue
        ws.memory.add([text])
        result.lines.append(
            PromotedLine(
                text=text,
                source=source,
                key=candidate.key,
                score=candidate.score,
                recalls=line.count,
                queries=len(line.queries),
            )
        )
        added = True
    return added


def undo_promotion(
    manager: MemorySearchManager,
    workspace: Path,
    settings: MemwellSettings,
    *,
    tracker: RecallTracker | None = None,
) -> UndoResult:
    """Restore MEMORY.md byte for byte to its state before the last promotion, forget that
    its chunks were promoted and sync the index.

    :raises MemwellError: no promotion to undo, or MEMORY.md changed since (nothing changed).
    """
    lock = workspace / settings.index_dir / LOCK_FILE_NAME
    with write_lock(lock, settings.write.lock_timeout_seconds):
        result, keys = undo_last(workspace, settings)
    with _sidecar(manager, workspace, settings, tracker) as store:
        store.unmark_promoted(keys)
    manager.sync(reason="write")
    return result
