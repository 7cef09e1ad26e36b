"""Auto-capture rules (reference section 7.5): which user messages become memories, and how.

A text is rejected, with the first matching reason, when it is too short or too long, carries
recalled memories, looks system-generated, is a Markdown summary, is emoji-heavy, or looks like
prompt injection (:func:`memwell.agent.looks_like_prompt_injection`); otherwise it is captured
only if a trigger matches (an explicit "remember", a preference, a decision, contact details,
"my X is", "always"/"never"/"important", in English and Czech as in the reference).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from memwell.agent import TurnMessage, looks_like_prompt_injection

MIN_CAPTURE_CHARS = 10
MAX_CAPTURES_PER_TURN = 3
MAX_EMOJI = 3

TOO_SHORT = "too_short"
TOO_LONG = "too_long"
RECALLED_MEMORIES = "recalled_memories"
SYSTEM_GENERATED = "system_generated"
MARKDOWN_SUMMARY = "markdown_summary"
EMOJI_HEAVY = "emoji_heavy"
PROMPT_INJECTION = "prompt_injection"
NO_TRIGGER = "no_trigger"
TURN_LIMIT = "turn_limit"

_EMOJI = re.compile("[\U0001f300-\U0001f9ff]")
TRIGGERS = tuple(
    re.compile(pattern, re.IGNORECASE)
    for pattern in (
        r"zapamatuj si|pamatuj|remember",
        r"preferuji|radši|nechci|prefer",
        r"rozhodli jsme|budeme používat",
        r"\+\d{10,}",
        r"[\w.-]+@[\w.-]+\.\w+",
        r"můj\s+\w+\s+je|je\s+můj",
        r"my\s+\w+\s+is|is\s+my",
        r"\bi (?:like|prefer|hate|love|want|need)\b",
        r"always|never|important",
    )
)
_CATEGORY_RULES = (
    ("preference", re.compile(r"prefer|radši|like|love|hate|want", re.IGNORECASE)),
    ("decision", re.compile(r"rozhodli|decided|will use|budeme", re.IGNORECASE)),
    ("entity", re.compile(r"\+\d{10,}|@[\w.-]+\.\w+|is called|jmenuje se", re.IGNORECASE)),
    # Word boundaries here (the reference matches substrings, so "this" made nearly all "fact").
    ("fact", re.compile(r"\b(?:is|are|has|have|je|má|jsou)\b", re.IGNORECASE)),
)


def rejection_reason(text: str, max_chars: int) -> str | None:
    """Why ``text`` must not be auto-captured, or ``None`` when it should be."""
    stripped = text.strip()
    if len(stripped) < MIN_CAPTURE_CHARS:
        return TOO_SHORT
    if len(stripped) > max_chars:
        return TOO_LONG
    if "<relevant-memories>" in stripped:
        return RECALLED_MEMORIES
    if stripped.startswith("<") and "</" in stripped:
        return SYSTEM_GENERATED
    if "**" in stripped and "\n-" in stripped:
        return MARKDOWN_SUMMARY
    if len(_EMOJI.findall(stripped)) > MAX_EMOJI:
        return EMOJI_HEAVY
    if looks_like_prompt_injection(stripped):
        return PROMPT_INJECTION
    if not any(trigger.search(stripped) for trigger in TRIGGERS):
        return NO_TRIGGER
    return None


def detect_category(text: str) -> str:
    """``preference``, ``decision``, ``entity``, ``fact`` or ``other``, first rule that matches."""
    for category, pattern in _CATEGORY_RULES:
        if pattern.search(text):
            return category
    return "other"


@dataclass(frozen=True)
class CaptureDecision:
    """What auto-capture decided for one user message; ``reason`` is None when eligible."""

    text: str
    reason: str | None


def select_captures(
    messages: Sequence[TurnMessage], *, max_chars: int, limit: int = MAX_CAPTURES_PER_TURN
) -> list[CaptureDecision]:
    """A decision for every user message, oldest first; only the first ``limit`` eligible
    texts stay eligible (later ones get :data:`TURN_LIMIT`). Other roles are ignored, so the
    model cannot poison its own memory."""
    decisions: list[CaptureDecision] = []
    eligible = 0
    for message in messages:
        if message.role != "user" or not message.content.strip():
            continue
        reason = rejection_reason(message.content, max_chars)
        if reason is None:
            eligible += 1
            if eligible > limit:
                reason = TURN_LIMIT
        decisions.append(CaptureDecision(message.content.strip(), reason))
    return decisions
