"""Conversational-memory evaluation on the LoCoMo layout (``turns.jsonl``, ``questions.jsonl``).

Each conversation is written the way an agent's memory is written: one dated Markdown file per
session (a heading with the session's date and time, then one line per turn, ``Speaker:
text``), named by one of two equally natural :data:`LAYOUTS`: ``per-session``
(``memory/YYYY-MM-DD-session-N.md``) or ``per-day`` (``memory/YYYY-MM-DD.md``, ``-2``,
``-3``... for a second and third session that day). Ranking must not lean on the file names,
so ``memwell eval`` measures both. Each conversation is indexed in its own workspace, every
question is asked of its own conversation, and two recalls are scored:

- session-level Recall@k: the fraction of a question's evidence sessions among the first k
  distinct files of the ranking (chunk hits collapsed to files, best chunk first);
- turn-level recall within the top k hits: the fraction of a question's evidence turns whose
  line lies inside the line range of one of the first k hits.

A question without evidence counts as 1 on every metric, as in the LoCoMo paper.

With a second search that uses the default ``min_score`` and ``max_results`` (what an agent
gets), the score floor is measured as a classifier: ``floor_kept`` is session recall among the
floored hits (the relevant session survives the floor), ``floor_empty`` is 1 when the floor
left nothing (wanted for adversarial questions, whose answer is not in the conversation).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from memwell.contract.errors import ConfigError
from memwell.contract.models import MemorySearchResult
from memwell.evaluation.beir import floor_dropped

SESSION_KS = (1, 3, 5)
TURN_KS = (5, 10)
CATEGORY_NAMES = {
    1: "multi-hop",
    2: "temporal",
    3: "open-domain",
    4: "single-hop",
    5: "adversarial",
}

_DATE_FORMATS = ("%I:%M %p on %d %B, %Y", "%I:%M %p on %d %b, %Y")

#: How session files are named (see the module docstring); ``per-session`` first.
LAYOUTS = ("per-session", "per-day")


@dataclass(frozen=True)
class Turn:
    """One dialog turn: ``dia_id`` is ``D<session>:<turn>``."""

    dia_id: str
    speaker: str
    text: str
    caption: str = ""


@dataclass
class Session:
    """One session of a conversation, in turn order."""

    number: int
    date_time: str
    turns: list[Turn] = field(default_factory=list)


@dataclass(frozen=True)
class Question:
    """A question with the turns (and sessions) that hold its answer."""

    qid: str
    conv_id: str
    text: str
    category: int
    evidence: tuple[str, ...]
    evidence_sessions: tuple[int, ...]


@dataclass
class Conversation:
    """One agent's memory: its sessions and the questions asked of it."""

    conv_id: str
    sessions: dict[int, Session] = field(default_factory=dict)
    questions: list[Question] = field(default_factory=list)


@dataclass(frozen=True)
class WrittenConversation:
    """Where each session and turn landed: file paths and 1-based line numbers."""

    session_paths: dict[int, str]
    turn_lines: dict[str, tuple[str, int]]


def is_conversation_dataset(directory: Path) -> bool:
    """True for a LoCoMo-layout directory (``turns.jsonl`` and ``questions.jsonl``)."""
    return (directory / "turns.jsonl").is_file() and (directory / "questions.jsonl").is_file()


def _jsonl(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    with path.open(encoding="utf-8") as fh:
        for number, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except json.JSONDecodeError as exc:
                raise ConfigError(f"{path}:{number}: not JSON ({exc.msg})") from exc
            if not isinstance(record, dict):
                raise ConfigError(f"{path}:{number}: expected a JSON object")
            yield number, record


def load_conversations(directory: Path) -> dict[str, Conversation]:
    """Read ``turns.jsonl`` and ``questions.jsonl`` into conversations, in file order."""
    if not is_conversation_dataset(directory):
        raise ConfigError(f"{directory} is not a LoCoMo dataset (turns.jsonl, questions.jsonl)")
    conversations: dict[str, Conversation] = {}
    turns_path = directory / "turns.jsonl"
    for number, rec in _jsonl(turns_path):
        try:
            conv_id, session_no = str(rec["conv_id"]), int(rec["session"])
            turn = Turn(str(rec["dia_id"]), str(rec["speaker"]), str(rec["text"]))
        except (KeyError, TypeError, ValueError) as exc:
            raise ConfigError(f"{turns_path}:{number}: malformed turn ({exc})") from exc
        if rec.get("blip_caption"):
            turn = Turn(turn.dia_id, turn.speaker, turn.text, str(rec["blip_caption"]))
        conv = conversations.setdefault(conv_id, Conversation(conv_id))
        session = conv.sessions.setdefault(
            session_no, Session(session_no, str(rec.get("session_date_time") or ""))
        )
        session.turns.append(turn)
    questions_path = directory / "questions.jsonl"
    for number, rec in _jsonl(questions_path):
        try:
            question = Question(
                qid=str(rec["qid"]),
                conv_id=str(rec["conv_id"]),
                text=str(rec["question"]),
                category=int(rec["category"]),
                evidence=tuple(str(e) for e in rec.get("evidence") or ()),
                evidence_sessions=tuple(int(s) for s in rec.get("evidence_sessions") or ()),
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise ConfigError(f"{questions_path}:{number}: malformed question ({exc})") from exc
        if question.conv_id not in conversations:
            raise ConfigError(f"{questions_path}:{number}: unknown conversation {question.conv_id}")
        conversations[question.conv_id].questions.append(question)
    return conversations


def session_date(date_time: str) -> datetime | None:
    """Parse LoCoMo's ``"1:56 pm on 8 May, 2023"``; None when it reads otherwise."""
    for fmt in _DATE_FORMATS:
        try:
            return datetime.strptime(date_time.strip(), fmt)
        except ValueError:
            continue
    return None


def _one_line(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip()


def turn_line(turn: Turn) -> str:
    """A turn as one Markdown line: ``Speaker: text`` plus any shared image's caption."""
    line = f"{_one_line(turn.speaker)}: {_one_line(turn.text)}"
    if turn.caption:
        line += f" [shares a photo: {_one_line(turn.caption)}]"
    return line


def _session_stem(number: int, when: datetime | None, layout: str, taken: set[str]) -> str:
    """The file name (without ``.md``) of session ``number`` in ``layout``; ``taken`` holds the
    names given so far (per-day adds ``-2``, ``-3``... to a day already taken)."""
    if when is None:
        return f"session-{number}"
    if layout == "per-session":
        return f"{when:%Y-%m-%d}-session-{number}"
    day = f"{when:%Y-%m-%d}"
    stem, nth = day, 1
    while stem in taken:
        nth += 1
        stem = f"{day}-{nth}"
    return stem


def write_conversation(
    conversation: Conversation, memory_dir: Path, layout: str = "per-session"
) -> WrittenConversation:
    """Write one dated Markdown file per session, named by ``layout`` (one of :data:`LAYOUTS`);
    unchanged files are not rewritten."""
    if layout not in LAYOUTS:
        raise ConfigError(f"unknown layout {layout!r}; expected one of {', '.join(LAYOUTS)}")
    memory_dir.mkdir(parents=True, exist_ok=True)
    session_paths: dict[int, str] = {}
    turn_lines: dict[str, tuple[str, int]] = {}
    taken: set[str] = set()
    for number in sorted(conversation.sessions):
        session = conversation.sessions[number]
        stem = _session_stem(number, session_date(session.date_time), layout, taken)
        taken.add(stem)
        rel = f"memory/{stem}.md"
        heading = f"# Session {number}: {session.date_time}".rstrip(": ")
        lines = [heading, ""]
        for turn in session.turns:
            lines.append(turn_line(turn))
            turn_lines[turn.dia_id] = (rel, len(lines))
        body = "\n".join(lines) + "\n"
        path = memory_dir / f"{stem}.md"
        if not path.is_file() or path.read_text(encoding="utf-8") != body:
            path.write_text(body, encoding="utf-8")
        session_paths[number] = rel
    return WrittenConversation(session_paths, turn_lines)


def distinct_files(results: Sequence[MemorySearchResult]) -> list[str]:
    """File paths in rank order, each at the rank of its best chunk."""
    return list(dict.fromkeys(hit.path for hit in results))


def session_recall(
    results: Sequence[MemorySearchResult], evidence_paths: set[str], k: int
) -> float:
    """Fraction of the evidence files among the first ``k`` distinct files (1.0 if none)."""
    if not evidence_paths:
        return 1.0
    return len(set(distinct_files(results)[:k]) & evidence_paths) / len(evidence_paths)


def turn_recall(
    results: Sequence[MemorySearchResult], evidence_lines: Sequence[tuple[str, int]], k: int
) -> float:
    """Fraction of evidence turns whose line lies inside one of the first ``k`` hits."""
    if not evidence_lines:
        return 1.0
    top = results[:k]
    found = sum(
        1
        for path, line in evidence_lines
        if any(hit.path == path and hit.start_line <= line <= hit.end_line for hit in top)
    )
    return found / len(evidence_lines)


FLOOR_METRICS = ("floor_kept", "floor_dropped", "floor_empty")


def metric_names() -> list[str]:
    """The metrics of one question, in report order."""
    return [f"session_recall_at_{k}" for k in SESSION_KS] + [f"turn_recall_at_{k}" for k in TURN_KS]


def floor_scores(
    question: Question,
    written: WrittenConversation,
    floored: Sequence[MemorySearchResult],
    top: Sequence[MemorySearchResult] = (),
) -> dict[str, float]:
    """The floor-as-classifier figures of one question (see the module docstring).

    ``top`` are the first hits of the unfloored ranking, as many as the floored search may
    return (its ``max_results``); ``floor_dropped`` is the share of the other sessions' files
    among them that the floor dropped (:func:`~memwell.evaluation.floor_dropped`).
    """
    evidence = _evidence_paths(question, written)
    kept = {hit.path for hit in floored}
    ranked = distinct_files(top)
    return {
        "floor_kept": session_recall(floored, evidence, len(floored)),
        "floor_dropped": floor_dropped(ranked, kept, evidence, len(ranked)),
        "floor_empty": float(not floored),
    }


def _evidence_paths(question: Question, written: WrittenConversation) -> set[str]:
    sessions = set(question.evidence_sessions) or {
        int(e[1:].split(":")[0]) for e in question.evidence if re.fullmatch(r"D\d+:\d+", e)
    }
    return {written.session_paths[s] for s in sessions if s in written.session_paths}


def score_question(
    question: Question,
    written: WrittenConversation,
    results: Sequence[MemorySearchResult],
) -> dict[str, float]:
    """Every metric of one question. Evidence that names no written turn or session is dropped."""
    evidence_lines = [written.turn_lines[e] for e in question.evidence if e in written.turn_lines]
    evidence_paths = _evidence_paths(question, written)
    scores = {
        f"session_recall_at_{k}": session_recall(results, evidence_paths, k) for k in SESSION_KS
    }
    scores.update({f"turn_recall_at_{k}": turn_recall(results, evidence_lines, k) for k in TURN_KS})
    return scores


def _mean(rows: Sequence[Mapping[str, float]]) -> dict[str, float]:
    names = [*metric_names(), *(m for m in FLOOR_METRICS if rows and all(m in r for r in rows))]
    if not rows:
        return {name: 0.0 for name in names} | {"questions": 0.0}
    means = {name: sum(row[name] for row in rows) / len(rows) for name in names}
    return means | {"questions": float(len(rows))}


def evaluate_conversation(
    conversation: Conversation,
    written: WrittenConversation,
    search: Callable[[str], list[MemorySearchResult]],
    floored: Callable[[str], list[MemorySearchResult]] | None = None,
    floor_depth: int = 6,
) -> list[tuple[Question, dict[str, float]]]:
    """Ask every question of one conversation; per-question scores in question order.

    ``floored`` (a search with the default floor and ``floor_depth`` = its ``max_results``)
    adds :func:`floor_scores`.
    """
    scored = []
    for q in conversation.questions:
        results = search(q.text)
        scores = score_question(q, written, results)
        if floored is not None:
            scores |= floor_scores(q, written, floored(q.text), results[:floor_depth])
        scored.append((q, scores))
    return scored


def summarize(scored: Sequence[tuple[Question, Mapping[str, float]]]) -> dict[str, Any]:
    """Means overall, for categories 1-4, for category 5, and per category."""
    rows = [scores for _, scores in scored]
    by_category: dict[str, dict[str, float]] = {}
    for category in sorted({q.category for q, _ in scored}):
        name = CATEGORY_NAMES.get(category, str(category))
        by_category[name] = _mean([s for q, s in scored if q.category == category])
    return {
        "overall": _mean(rows),
        "categories_1_4": _mean([s for q, s in scored if q.category != 5]),
        "adversarial": _mean([s for q, s in scored if q.category == 5]),
        "by_category": by_category,
    }
