"""Auto-capture rules (reference section 7.5, improved): which user messages become memories.

A text is rejected, with the first matching reason, when it is too short or too long, is
trivial (filler such as "ok", "thanks", or fewer than three letters and digits), carries
recalled memories, looks system-generated, is a Markdown summary, is emoji-heavy, or looks like
prompt injection (:func:`memwell.agent.looks_like_prompt_injection`). Questions are never
memories: their sentences are dropped, and a message of questions only is rejected. What is
left is captured only if a trigger matches: the reference's (an explicit "remember", a
preference, contact details, "my X is", "always"/"never"/"important", in English and Czech),
plus decisions ("we decided ...", "we'll use ...", "let's go with ..."), corrections
("actually, it's X not Y", "I meant ...") and plain facts (a statement with a verb of being or
having and a concrete detail: a number, a name, an identifier).

Each capture gets an importance from what it is (:func:`capture_importance`): corrections
0.9, decisions 0.85, preferences and entities 0.75, facts 0.7, anything else 0.6, plus 0.1 for
an explicit "remember"; recall ranks by similarity weighted with it
(:func:`memwell_lancedb.memory.ranking_score`).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from memwell.plugin import TurnMessage, looks_like_prompt_injection

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
TRIVIAL = "trivial"
QUESTION = "question"

#: Words that carry no memory on their own ("ok thanks", "sounds good").
FILLER_WORDS = frozenset(
    {
        "ok",
        "okay",
        "k",
        "kk",
        "thanks",
        "thank",
        "thx",
        "ty",
        "you",
        "yes",
        "yeah",
        "yep",
        "yup",
        "no",
        "nope",
        "sure",
        "cool",
        "great",
        "nice",
        "fine",
        "good",
        "got",
        "it",
        "sounds",
        "perfect",
        "alright",
        "right",
        "hmm",
        "hm",
        "hi",
        "hello",
        "hey",
        "bye",
        "lol",
        "please",
        "awesome",
        "agreed",
        "noted",
        "done",
        "understood",
        "a",
        "lot",
        "much",
        "so",
        "very",
        "all",
    }
)
MIN_WORD_CHARS = 3
_WORD_CHAR = re.compile(r"[^\W_]")
_WORDS = re.compile(r"[^\W_]+(?:'[^\W_]+)?")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|\n+")
_WH_START = re.compile(r"^(?:what|which|who|whom|whose|when|where|why|how)\b", re.IGNORECASE)
_AUX_START = re.compile(
    r"^(?:do|does|did|can|could|would|should|will|shall|is|are|am|was|were|have|has|may|"
    r"might)\s+(?:i|you|we|they|he|she|it|there|this|that|these|those|the|my|our|your)\b",
    re.IGNORECASE,
)


def _patterns(*patterns: str) -> tuple[re.Pattern[str], ...]:
    return tuple(re.compile(pattern, re.IGNORECASE) for pattern in patterns)


DECISIONS = _patterns(
    r"\b(?:we|i|the team)\s+(?:have\s+|has\s+)?(?:decided|agreed|chose|picked|settled)\b",
    r"\bdecided\s+(?:to|on|that)\b",
    r"\b(?:we'll|we will|we're going to|we are going to|let's|lets)\s+"
    r"(?:use|go with|adopt|switch to|move to|stick with|keep|ship|deploy)\b",
    r"\bgoing (?:to go )?with\b",
    r"\bthe (?:decision|plan) is\b",
)
CORRECTIONS = _patterns(
    r"^\s*(?:actually|correction|to clarify|no|sorry|wait)\b\s*[,:;-]",
    r"^\s*actually\b",
    r"\bi meant\b",
    r"\b(?:it'?s|it is|that'?s|that is|they'?re|they are)\s+[\w.@/-]+(?:\s+[\w.@/-]+)?"
    r",?\s+not\s+[\w.@/-]+",
    r"\bnot\s+[\w.@/-]+\s*,?\s+but\s+\w+",
    r"\binstead of\b",
)
_FACT_VERB = re.compile(
    r"\b(?:is|are|was|were|has|have|uses|runs|costs|takes|lasts|starts|ends|lives|works|"
    r"means|equals|called|named)\b",
    re.IGNORECASE,
)
_CONCRETE = re.compile(r"\d|\b\w+[_./:@-]\w+|(?<=\s)[A-Z][\w-]*")

_EMOJI = re.compile("[\U0001f300-\U0001f9ff]")
TRIGGERS = _patterns(
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
_CATEGORY_RULES = (
    ("preference", re.compile(r"prefer|radši|like|love|hate|want", re.IGNORECASE)),
    ("decision", re.compile(r"rozhodli|decided|will use|'ll use|budeme", re.IGNORECASE)),
    ("entity", re.compile(r"\+\d{10,}|@[\w.-]+\.\w+|is called|jmenuje se", re.IGNORECASE)),
    # Word boundaries here (the reference matches substrings, so "this" made nearly all "fact").
    ("fact", re.compile(r"\b(?:is|are|has|have|je|má|jsou)\b", re.IGNORECASE)),
)


def is_trivial(text: str) -> bool:
    """Fewer than three letters and digits, or nothing but filler words."""
    if len(_WORD_CHAR.findall(text)) < MIN_WORD_CHARS:
        return True
    return all(word in FILLER_WORDS for word in _WORDS.findall(text.lower()))


def is_question(sentence: str) -> bool:
    """A sentence that asks rather than tells (``?``, or a question's opening words)."""
    stripped = sentence.strip()
    if stripped.endswith("?"):
        return True
    if _WH_START.match(stripped):
        return not stripped.endswith((".", "!"))
    return _AUX_START.match(stripped) is not None


def statements(text: str) -> str:
    """``text`` without its questions (sentences kept in order, joined by spaces)."""
    kept = [s.strip() for s in _SENTENCE_END.split(text.strip()) if s.strip()]
    return " ".join(s for s in kept if not is_question(s))


def is_decision(text: str) -> bool:
    return any(pattern.search(text) for pattern in DECISIONS)


def is_correction(text: str) -> bool:
    return any(pattern.search(text) for pattern in CORRECTIONS)


def is_fact(text: str) -> bool:
    """A statement of at least four words with a verb of being or having and a detail."""
    return (
        len(_WORDS.findall(text)) >= 4
        and _FACT_VERB.search(text) is not None
        and _CONCRETE.search(text) is not None
    )


def rejection_reason(text: str, max_chars: int) -> str | None:
    """Why ``text`` must not be auto-captured, or ``None`` when it should be (judge
    :func:`statements` of a message: its questions are never captured)."""
    stripped = text.strip()
    if len(stripped) < MIN_CAPTURE_CHARS:
        return TRIVIAL if is_trivial(stripped) else TOO_SHORT
    if len(stripped) > max_chars:
        return TOO_LONG
    if is_trivial(stripped):
        return TRIVIAL
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
    told = statements(stripped)
    if len(told) < MIN_CAPTURE_CHARS:
        return QUESTION
    if not (
        any(trigger.search(told) for trigger in TRIGGERS)
        or is_decision(told)
        or is_correction(told)
        or is_fact(told)
    ):
        return NO_TRIGGER
    return None


def detect_category(text: str) -> str:
    """``preference``, ``decision``, ``entity``, ``fact`` or ``other``, first rule that matches
    (a correction that matches none is a ``fact``)."""
    for category, pattern in _CATEGORY_RULES:
        if pattern.search(text):
            return category
    if is_decision(text):
        return "decision"
    return "fact" if is_correction(text) or is_fact(text) else "other"


_IMPORTANCE = {"decision": 0.85, "preference": 0.75, "entity": 0.75, "fact": 0.7, "other": 0.6}
_REMEMBER = re.compile(r"zapamatuj si|pamatuj|remember", re.IGNORECASE)


def capture_importance(text: str, category: str) -> float:
    """How much a captured memory matters (see the module docstring)."""
    importance = 0.9 if is_correction(text) else _IMPORTANCE.get(category, 0.6)
    if _REMEMBER.search(text):
        importance += 0.1
    return round(min(1.0, importance), 2)


@dataclass(frozen=True)
class CaptureDecision:
    """What auto-capture decided for one user message; ``reason`` is None when eligible."""

    text: str
    reason: str | None


def select_captures(
    messages: Sequence[TurnMessage], *, max_chars: int, limit: int = MAX_CAPTURES_PER_TURN
) -> list[CaptureDecision]:
    """A decision for every user message, oldest first; only the first ``limit`` eligible
    texts stay eligible (later ones get :data:`TURN_LIMIT`). An eligible text is the message's
    :func:`statements`. Other roles are ignored, so the model cannot poison its own memory."""
    decisions: list[CaptureDecision] = []
    eligible = 0
    for message in messages:
        if message.role != "user" or not message.content.strip():
            continue
        reason = rejection_reason(message.content, max_chars)
        text = message.content.strip()
        if reason is None:
            text = statements(text)
            eligible += 1
            if eligible > limit:
                reason = TURN_LIMIT
        decisions.append(CaptureDecision(text, reason))
    return decisions
