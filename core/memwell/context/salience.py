"""What must survive compression: requirements, decisions, preferences and open tasks.

Patterns are English; a sentence may fall in several kinds. Used by the light pass
(decisions, preferences and tasks are never dropped as near-duplicates), the extractive summary
and the heavy digest, which keep every decision and every open task (explicit tasks and
reminders: "TODO", "remind me", "we must", "next step"...).

Entities are names: capitalised words and phrases, code spans and paths. A capitalised word
that starts a sentence ("Can", "First", "Noted") counts only when the conversation also
writes it capitalised inside a sentence, or it is no plain word (``PostgreSQL``, ``K8s``).
"""

from __future__ import annotations

import re
from collections import Counter
from typing import Literal

Kind = Literal["decisions", "preferences", "requirements", "open_tasks"]
KINDS: tuple[Kind, ...] = ("decisions", "preferences", "requirements", "open_tasks")

_PATTERNS: dict[Kind, re.Pattern[str]] = {
    "decisions": re.compile(
        r"\b(?:decided|decide|decision|agreed|chose|choose|settled on|go(?:ing)? with"
        r"|we(?:'ll| will) (?:use|go|keep|ship|switch)|let'?s (?:use|go|keep|ship|switch))\b",
        re.IGNORECASE,
    ),
    "preferences": re.compile(
        r"\b(?:i (?:prefer|like|love|hate|dislike|want|always|never|rather)|prefer(?:s|red|ence)?"
        r"|please (?:always|never|don'?t|do not|use|avoid)|don'?t (?:ever )?use|avoid)\b",
        re.IGNORECASE,
    ),
    "requirements": re.compile(
        r"\b(?:must|required?|requirements?|needs? to|has to|have to|should|shall"
        r"|at (?:least|most)|no more than|deadline|mandatory)\b",
        re.IGNORECASE,
    ),
    "open_tasks": re.compile(
        r"\b(?:todo|to-do|next steps?|open question|follow[- ]up|pending|remaining|still need"
        r"|need to|action item|tbd|not (?:yet )?done|later|remind (?:me|us)|reminder"
        r"|(?:don'?t|do not) forget|make sure (?:to|we|you)|we (?:must|should|have to)"
        r"|i (?:must|will|'ll)|(?:you|we)(?:'ll| will) need)\b",
        re.IGNORECASE,
    ),
}
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|\n+")
_ENTITY = re.compile(
    r"`([^`\n]{2,60})`"  # code spans
    r"|((?:https?://|\.{0,2}/)?[\w.-]+/[\w./-]*\w)"  # paths and URLs
    r"|\b([A-Z][a-zA-Z0-9]+(?:[ -][A-Z][a-zA-Z0-9]+)*)\b"  # Capitalised names
)
#: Where a sentence starts: the text's start, after ``.!?:``, a line break or a list marker.
_SENTENCE_START = re.compile(r"(?:^|[.!?:]\s+|\n\s*(?:[-*+>]\s+|\d+[.)]\s+)?)$")
_PLAIN_WORD = re.compile(r"[A-Z][a-z]+")
_NOT_ENTITIES = frozenset(
    [
        "I",
        "I'm",
        "I'll",
        "I've",
        "We",
        "We'll",
        "You",
        "It",
        "It's",
        "The",
        "This",
        "That",
        "These",
        "Those",
        "A",
        "An",
        "And",
        "But",
        "Or",
        "So",
        "If",
        "Then",
        "OK",
        "Ok",
        "Yes",
        "No",
        "Please",
        "Thanks",
        "Thank",
        "Also",
        "Let",
        "Let's",
        "Sure",
        "Great",
        "Good",
        "Now",
        "Next",
        "Today",
        "User",
        "Assistant",
        "Tool",
        "System",
        "What",
        "Which",
        "When",
        "Where",
        "Why",
        "How",
        "Who",
        "TODO",
    ]
)


def sentences(text: str) -> list[str]:
    """``text`` split into sentences and lines, stripped, blanks dropped."""
    return [s.strip() for s in _SENTENCE_END.split(text) if s.strip()]


def kinds_of(sentence: str) -> list[Kind]:
    """The kinds of salient content ``sentence`` holds, in :data:`KINDS` order."""
    return [kind for kind in KINDS if _PATTERNS[kind].search(sentence)]


def is_decision_or_preference(text: str) -> bool:
    """Whether ``text`` states a decision or a preference."""
    return bool(_PATTERNS["decisions"].search(text) or _PATTERNS["preferences"].search(text))


def is_kept(text: str) -> bool:
    """Whether ``text`` states a decision, a preference or an open task: never dropped."""
    return is_decision_or_preference(text) or bool(_PATTERNS["open_tasks"].search(text))


def _initial(text: str, start: int) -> bool:
    """Whether the match at ``start`` begins a sentence."""
    return _SENTENCE_START.search(text[max(0, start - 8) : start]) is not None


def entities(texts: list[str], limit: int) -> list[str]:
    """The ``limit`` most mentioned names, code spans and paths, first mention breaking ties
    (see the module docstring for what is a name)."""
    found: list[tuple[str, bool]] = []  # (name, whether its first word starts a sentence)
    inside: set[str] = set()  # capitalised words seen inside a sentence
    for text in texts:
        for match in _ENTITY.finditer(text):
            name = next(group for group in match.groups() if group)
            initial = match.group(3) is not None and _initial(text, match.start())
            words = name.split(" ")
            while words and words[0] in _NOT_ENTITIES:  # a sentence's first word is no name
                words.pop(0)
                initial = False
            if match.group(3) is not None:
                inside.update(words[1:] if initial else words)
            found.append((" ".join(words), initial))
    counts: Counter[str] = Counter()
    first: dict[str, int] = {}
    for name, initial in found:
        if initial and name.split(" ")[0] not in inside:
            head, _, rest = name.partition(" ")
            if _PLAIN_WORD.fullmatch(head):
                name = rest  # "Noted Postgres" -> "Postgres"; "Can" -> ""
        if name in _NOT_ENTITIES or len(name) < 2:
            continue
        counts[name] += 1
        first.setdefault(name, len(first))
    ranked = sorted(counts, key=lambda name: (-counts[name], first[name]))
    return ranked[:limit]
