""":func:`compress`: a conversation that fits a token budget, by the context-usage policy."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from memwell.context.salience import KINDS, entities, is_kept, kinds_of, sentences
from memwell.context.tokens import EstimatedTokens, TokenCounter
from memwell.context.transcript import Turn
from memwell.contract.errors import InvalidArgumentError

Level = Literal["none", "light", "summary", "heavy"]
#: Context usage (conversation tokens / budget) from which each level applies.
LIGHT_AT, SUMMARY_AT, HEAVY_AT = 0.6, 0.8, 0.9
SUMMARY_WORDS = 300
#: Turns kept verbatim after the summary (fewer when they do not fit).
RECENT_TURNS = 4
#: Tool outputs longer than this are collapsed to their first and last lines.
TOOL_OUTPUT_CHARS = 1200
TOOL_HEAD_LINES, TOOL_TAIL_LINES = 6, 2
#: Word-set Jaccard similarity from which two turns of one role are near-duplicates.
NEAR_DUPLICATE = 0.9
NEAR_DUPLICATE_MIN_WORDS = 5
ENTITY_LIMIT = 25
_WORD = re.compile(r"\w+")

#: What compression never drops: every decision and every open task (tasks and reminders).
KEPT_KINDS = ("decisions", "open_tasks")


class BudgetTooSmallError(InvalidArgumentError):
    """The budget cannot hold the conversation's decisions and open tasks: nothing is
    returned rather than a digest without them."""


#: Summarises turns in at most the given number of words. The default is
#: :func:`extractive_summary`; a text-generation plugin can supply another.
Summarize = Callable[[Sequence[Turn], int], str]


@dataclass(frozen=True)
class Compressed:
    """The outcome: the level applied, token counts, and the turns to send instead (for
    ``heavy``, one system turn holding :attr:`digest` as JSON)."""

    level: Level
    budget: int
    tokens_before: int
    tokens_after: int
    tokenizer: str
    turns: list[Turn]
    digest: dict[str, Any] | None = None
    dropped_turns: int = 0
    collapsed_outputs: int = 0
    notes: list[str] = field(default_factory=list)

    @property
    def usage(self) -> float:
        """Context usage before compression (tokens over budget)."""
        return self.tokens_before / self.budget

    @property
    def fits(self) -> bool:
        return self.tokens_after <= self.budget

    def to_dict(self) -> dict[str, Any]:
        return {
            "level": self.level,
            "usage": round(self.usage, 4),
            "budget": self.budget,
            "tokens_before": self.tokens_before,
            "tokens_after": self.tokens_after,
            "fits": self.fits,
            "tokenizer": self.tokenizer,
            "dropped_turns": self.dropped_turns,
            "collapsed_outputs": self.collapsed_outputs,
            "notes": list(self.notes),
            "turns": [t.to_dict() for t in self.turns],
            "digest": self.digest,
        }


def count_tokens(turns: Sequence[Turn], counter: TokenCounter) -> int:
    """Tokens of the turns rendered as ``role: content`` lines."""
    return sum(counter.count(f"{t.role}: {t.content}\n") for t in turns)


def level_for(usage: float) -> Level:
    """The policy: below 0.6 none, below 0.8 light, below 0.9 summary, else heavy."""
    if usage < LIGHT_AT:
        return "none"
    if usage < SUMMARY_AT:
        return "light"
    if usage < HEAVY_AT:
        return "summary"
    return "heavy"


# -- light ------------------------------------------------------------------------------------


def _words(text: str) -> frozenset[str]:
    return frozenset(w.lower() for w in _WORD.findall(text))


def _near_duplicate(words: frozenset[str], earlier: Sequence[frozenset[str]]) -> bool:
    if len(words) < NEAR_DUPLICATE_MIN_WORDS:
        return False
    return any(len(words & e) / len(words | e) >= NEAR_DUPLICATE for e in earlier if e)


def collapse_tool_output(text: str) -> str:
    """The first and last lines of a long tool output, with a line saying what was cut."""
    lines = text.splitlines()
    if len(lines) <= TOOL_HEAD_LINES + TOOL_TAIL_LINES:
        head = text[: TOOL_OUTPUT_CHARS // 2].rstrip()
        return f"{head}\n[... tool output collapsed: {len(text)} characters in all]"
    cut = len(lines) - TOOL_HEAD_LINES - TOOL_TAIL_LINES
    return "\n".join(
        [
            *lines[:TOOL_HEAD_LINES],
            f"[... {cut} lines of tool output collapsed ({len(text)} characters in all)]",
            *lines[-TOOL_TAIL_LINES:],
        ]
    )


def light(turns: Sequence[Turn]) -> tuple[list[Turn], int, int]:
    """Deterministic pass: exact duplicates and near-duplicates (same role) dropped, long
    tool outputs collapsed; a user or assistant turn stating a decision, a preference or a
    task is only dropped as an exact repeat. Returns the turns, how many were dropped and how
    many collapsed."""
    kept: list[Turn] = []
    seen: set[tuple[str, str]] = set()
    words_by_role: dict[str, list[frozenset[str]]] = {}
    dropped = collapsed = 0
    for turn in turns:
        key = (turn.role, " ".join(turn.content.split()).lower())
        words = _words(turn.content)
        protected = turn.role in ("user", "assistant") and is_kept(turn.content)
        earlier = words_by_role.setdefault(turn.role, [])
        if key in seen or (not protected and _near_duplicate(words, earlier)):
            dropped += 1
            continue
        seen.add(key)
        earlier.append(words)
        if turn.role == "tool" and len(turn.content) > TOOL_OUTPUT_CHARS:
            turn = Turn(turn.role, collapse_tool_output(turn.content))
            collapsed += 1
        kept.append(turn)
    return kept, dropped, collapsed


# -- summary ----------------------------------------------------------------------------------

_HEADINGS = {
    "decisions": "Decisions",
    "preferences": "Preferences",
    "requirements": "Requirements",
    "open_tasks": "Open tasks",
}


def salient_items(turns: Sequence[Turn]) -> dict[str, list[str]]:
    """Each kind's sentences from user and assistant turns, deduplicated, in order; user
    sentences first within a kind."""
    found: dict[str, list[str]] = {kind: [] for kind in KINDS}
    for role in ("user", "assistant"):
        for turn in turns:
            if turn.role != role:
                continue
            for sentence in sentences(turn.content):
                for kind in kinds_of(sentence):
                    if sentence not in found[kind]:
                        found[kind].append(sentence)
    return found


def extractive_summary(turns: Sequence[Turn], max_words: int) -> str:
    """A summary made of the turns' own sentences: the opening request, every decision and
    open task, then requirements and preferences taken in turn until ``max_words``."""
    items = salient_items(turns)
    first_user = next((t.content for t in turns if t.role == "user"), "")
    goal = sentences(first_user)[:1]
    lines: list[str] = [f"Goal: {goal[0]}"] if goal else []
    order = ("decisions", "requirements", "preferences", "open_tasks")
    chosen: dict[str, list[str]] = {kind: [] for kind in order}
    for kind in KEPT_KINDS:
        chosen[kind] = [
            s for s in items[kind] if s not in chosen["decisions"] and (not goal or s != goal[0])
        ]
    words = sum(len(line.split()) for line in lines) + sum(
        len(s.split()) + 1 for kind in KEPT_KINDS for s in chosen[kind]
    )
    queues = {
        kind: [s for s in items[kind] if not goal or s != goal[0]]
        for kind in order
        if kind not in KEPT_KINDS
    }
    progress = True
    while progress:
        progress = False
        for kind in queues:
            if not queues[kind]:
                continue
            sentence = queues[kind].pop(0)
            if any(sentence in chosen[k] for k in order):
                progress = True
                continue
            size = len(sentence.split()) + 1
            if words + size > max_words:
                queues[kind].clear()
                continue
            chosen[kind].append(sentence)
            words += size
            progress = True
    for kind in order:
        if chosen[kind]:
            lines.append(f"{_HEADINGS[kind]}:")
            lines += [f"- {s}" for s in chosen[kind]]
    return "\n".join(lines)


def _kept_items(turns: Sequence[Turn]) -> list[str]:
    items = salient_items(turns)
    return list(dict.fromkeys(s for kind in KEPT_KINDS for s in items[kind]))


def _summary_turns(
    turns: list[Turn], budget: int, counter: TokenCounter, summarize: Summarize
) -> list[Turn] | None:
    for recent in range(min(RECENT_TURNS, len(turns) - 1), -1, -1):
        older, newer = turns[: len(turns) - recent], turns[len(turns) - recent :]
        text = summarize(older, SUMMARY_WORDS)
        missing = [s for s in _kept_items(older) if s not in text]
        if missing:  # a summariser that left a decision or task out: add it verbatim
            text += "\nKept verbatim:\n" + "\n".join(f"- {s}" for s in missing)
        summary = Turn("system", f"Summary of {len(older)} earlier turns:\n{text}")
        candidate = [summary, *newer]
        if count_tokens(candidate, counter) <= budget:
            return candidate
    return None


# -- heavy ------------------------------------------------------------------------------------

#: Lists trimmed, in this order, when the digest does not fit; decisions and open tasks never.
_TRIM_ORDER = ("entities", "requirements", "preferences")


def digest(turns: Sequence[Turn]) -> dict[str, Any]:
    """The structured digest: entities, decisions, preferences, requirements, open tasks."""
    items = salient_items(turns)
    texts = [t.content for t in turns if t.role in ("user", "assistant")]
    return {
        "entities": entities(texts, ENTITY_LIMIT),
        "decisions": items["decisions"],
        "preferences": items["preferences"],
        "requirements": items["requirements"],
        "open_tasks": items["open_tasks"],
        "turns_compressed": len(turns),
    }


def _heavy_turn(data: dict[str, Any]) -> Turn:
    return Turn("system", json.dumps(data, ensure_ascii=False))


def _fit_digest(
    data: dict[str, Any], budget: int, counter: TokenCounter
) -> tuple[dict[str, Any], int]:
    """Drop list items, least important first, until the digest fits; returns it and how
    many items were dropped.

    :raises BudgetTooSmallError: the decisions and open tasks alone do not fit.
    """
    trimmed = 0
    while (size := count_tokens([_heavy_turn(data)], counter)) > budget:
        key = next((k for k in _TRIM_ORDER if data[k]), None)
        if key is None:
            kept = sum(len(data[k]) for k in KEPT_KINDS)
            raise BudgetTooSmallError(
                f"a budget of {budget} tokens cannot hold the conversation's {kept} decisions "
                f"and open tasks ({size} tokens in the smallest digest); raise the budget"
            )
        data[key] = data[key][:-1]
        trimmed += 1
    return data, trimmed


# -- the policy -------------------------------------------------------------------------------


def compress(
    turns: Sequence[Turn],
    budget: int,
    *,
    counter: TokenCounter | None = None,
    summarize: Summarize = extractive_summary,
) -> Compressed:
    """Fit ``turns`` into ``budget`` tokens by the usage policy (:func:`level_for`).

    A level whose result does not fit gives way to the next one; every level keeps every
    decision and open task; the heavy digest drops entities, requirements and preferences
    (in that order) until it fits.

    :param counter: token counter (default :class:`~memwell.context.tokens.EstimatedTokens`).
    :param summarize: the summary level's summariser (default :func:`extractive_summary`).
    :raises ValueError: ``budget`` is not positive.
    :raises BudgetTooSmallError: the budget cannot hold the decisions and open tasks.
    """
    if budget <= 0:
        raise InvalidArgumentError(f"budget must be a positive number of tokens, got {budget}")
    tokens = counter or EstimatedTokens()
    before = count_tokens(turns, tokens)
    level = level_for(before / budget)

    def done(out: list[Turn], lvl: Level, **extra: Any) -> Compressed:
        return Compressed(lvl, budget, before, count_tokens(out, tokens), tokens.name, out, **extra)

    if level == "none":
        return done(list(turns), "none")
    lightened, dropped, collapsed = light(turns)
    counts = {"dropped_turns": dropped, "collapsed_outputs": collapsed}
    notes: list[str] = []
    if level == "light":
        if count_tokens(lightened, tokens) <= budget:
            return done(lightened, "light", **counts)
        notes.append("light pass did not fit; summarised")
        level = "summary"
    if level == "summary" and lightened:
        summarised = _summary_turns(lightened, budget, tokens, summarize)
        if summarised is not None:
            return done(summarised, "summary", notes=notes, **counts)
        notes.append("summary did not fit; digested")
    data, trimmed = _fit_digest(digest(lightened), budget, tokens)
    if trimmed:
        notes.append(f"digest trimmed by {trimmed} items to fit")
    return done([_heavy_turn(data)], "heavy", digest=data, notes=notes, **counts)
