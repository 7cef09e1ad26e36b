"""Facts in a line, for supersession: subject, attribute and value, without an LLM.

:func:`facts_of` finds the values a line states (ports, times, dates, weekdays, counts and
durations, owners, preferences) and, for each, the attribute (``port``, ``time``, ``date``,
``weekday``, ``count:<noun>``, ``owner``, ``preference[:<what>]``) and the subject: the line's
content words without the value, the attribute's own words, stop words, verbs of stating and
change cues. :func:`supersedes` says whether a new fact replaces an old one: same attribute,
same subject, a different value.

Precision comes first. A subject must match as a set of words (one extra word on one side is
allowed only when it is not a qualifier such as ``staging`` or ``production``), so facts about
look-alike subjects are never matched; a line stating two values of one attribute, a negated
line and a line about the past state no fact; a bare preference ("prefers X") replaces another
only when it reverses an "X over Y", or with a change cue ("now", "instead", "switched") and a
word in common ("dark mode" -> "light mode").
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

from memwell.retrieval.date_match import MONTHS as _MONTHS
from memwell.util.lazy_import import lazy_pattern

_WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
_MONTH = r"(?:" + "|".join(sorted(_MONTHS, key=len, reverse=True)) + r")\.?"
_UNITS = {"minute", "hour", "day", "week", "month", "year", "second"}

_PORT = lazy_pattern(r"\bports?\b(?:\s+(?:is|=|:|of|to|number|at|on))*\s*:?\s*(\d{2,5})\b", re.I)
_HOST_PORT = lazy_pattern(r"\b[a-z][\w.-]*:(\d{2,5})\b(?![:.]\d)", re.I)
_TIME = lazy_pattern(
    r"(?<![\w:.])(?:(\d{1,2}):(\d{2})\s*(am|pm|a\.m\.|p\.m\.)?|(\d{1,2})\s*(am|pm|a\.m\.|p\.m\.))"
    r"(?![\w:])",
    re.I,
)
_ISO_DATE = lazy_pattern(r"\b(\d{4})-(\d{2})-(\d{2})\b")
_MONTH_DAY = lazy_pattern(
    rf"\b(?:({_MONTH})\s+(\d{{1,2}})(?:st|nd|rd|th)?(?!\s*-?\s*(?:day|week|hour)s?\b)"
    rf"|(\d{{1,2}})(?:st|nd|rd|th)?\s+(?:of\s+)?({_MONTH}))(?:,?\s+(\d{{4}}))?\b",
    re.I,
)
_WEEKDAY = lazy_pattern(r"\b(" + "|".join(_WEEKDAYS) + r")s?\b", re.I)
_COUNT = lazy_pattern(r"(?<![\w.:/-])(\d{1,7})(?:\s*-\s*|\s+)([a-z]{3,20})\b", re.I)
_OWNER = lazy_pattern(
    r"\b(?:owned|maintained|run|led)\s+by\s+(?P<a>[A-Z][\w'-]*(?:\s+[A-Z][\w'-]*)?)"
    r"|\bowner\s*(?:is|:|=)\s*(?P<b>[A-Z][\w'-]*(?:\s+[A-Z][\w'-]*)?)"
    r"|(?P<c>[A-Z][\w'-]*(?:\s+[A-Z][\w'-]*)?)\s+(?:now\s+)?(?:owns|maintains|leads)\b"
    r"|(?P<d>[A-Z][\w'-]*(?:\s+[A-Z][\w'-]*)?)\s+is\s+(?:now\s+)?(?:the\s+)?owner\s+of\b"
)
_PREFERRED = lazy_pattern(
    r"\b(?:preferred|favou?rite)\s+(?P<what>[a-z]+(?:\s+[a-z]+)?)\s+(?:is|=|:)\s+(?:now\s+)?"
    r"(?P<value>[^.;,]+)",
    re.I,
)
_PREFERS = lazy_pattern(
    r"\bprefer(?:s|red)?\s+(?:to\s+)?(?P<value>[^.;,]+?)"
    r"(?:\s+(?:over|to|instead of|rather than)\s+(?P<other>[^.;,]+?))?"
    r"(?:\s+for\s+(?P<what>[^.;,]+?))?\s*(?:[.;,]|$)",
    re.I,
)
_NEGATED = lazy_pattern(
    r"\b(?:not|no longer|never|isn't|aren't|wasn't|doesn't|don't|didn't|won't)\b", re.I
)
_PAST = lazy_pattern(
    r"\b(?:previously|formerly|used to|before|until|was (?:on|at)|were (?:on|at))\b", re.I
)
_CHANGE = lazy_pattern(r"\b(?:now|instead|switched|changed|moved|from now on|anymore)\b", re.I)
_WORD = lazy_pattern(r"\d+(?:\.\d+)+|[a-z0-9][a-z0-9_'-]*")  # a version (2.4) is one word
_LIST_PREFIX = lazy_pattern(r"^\s{0,3}(?:[-*+]|\d{1,9}[.)])\s+(?:\[[ xX]\]\s+)?")
_ROLE_PREFIX = lazy_pattern(r"^(?:user|assistant):\s+", re.I)

_STOP = frozenset(
    [
        "a",
        "an",
        "the",
        "this",
        "that",
        "these",
        "those",
        "it",
        "its",
        "is",
        "are",
        "was",
        "were",
        "be",
        "been",
        "being",
        "am",
        "has",
        "have",
        "had",
        "do",
        "does",
        "did",
        "of",
        "in",
        "on",
        "at",
        "to",
        "for",
        "from",
        "by",
        "with",
        "as",
        "and",
        "or",
        "but",
        "our",
        "my",
        "your",
        "their",
        "his",
        "her",
        "its",
        "we",
        "i",
        "you",
        "they",
        "he",
        "she",
        "them",
        "us",
        "me",
        "so",
        "then",
        "than",
        "also",
        "just",
        "still",
        "currently",
        "currently",
        "now",
        "new",
        "will",
        "would",
        "should",
        "can",
        "could",
        "may",
        "might",
        "must",
        "shall",
        "here",
        "there",
        "which",
        "who",
        "whom",
        "whose",
        "what",
        "when",
        "where",
        "how",
        "about",
        "into",
        "onto",
        "over",
        "under",
        "up",
        "down",
        "out",
        "off",
        "per",
        "via",
        "each",
        "every",
        "all",
        "any",
        "some",
        "no",
        "yes",
        "one",
    ]
)
#: Verbs of stating a value and change cues: not part of a subject.
_VERBS = frozenset(
    [
        "listen",
        "listens",
        "listening",
        "run",
        "runs",
        "running",
        "use",
        "uses",
        "using",
        "set",
        "sits",
        "sit",
        "is",
        "are",
        "live",
        "lives",
        "moved",
        "move",
        "moves",
        "changed",
        "change",
        "changes",
        "switched",
        "switch",
        "switches",
        "bumped",
        "bump",
        "raised",
        "lowered",
        "increased",
        "decreased",
        "reduced",
        "updated",
        "update",
        "became",
        "become",
        "becomes",
        "starts",
        "start",
        "started",
        "begins",
        "begin",
        "happens",
        "happen",
        "held",
        "holds",
        "take",
        "takes",
        "taken",
        "scheduled",
        "planned",
        "due",
        "going",
        "goes",
        "go",
        "expose",
        "exposes",
        "exposed",
        "serve",
        "serves",
        "served",
        "bound",
        "bind",
        "binds",
        "point",
        "points",
        "keep",
        "keeps",
        "kept",
        "retain",
        "retains",
        "retained",
        "stay",
        "stays",
        "available",
        "now",
        "instead",
        "anymore",
    ]
)
#: Words that tell look-alike subjects apart: never ignored when subjects are compared.
_QUALIFIERS = frozenset(
    [
        "staging",
        "production",
        "prod",
        "dev",
        "development",
        "test",
        "testing",
        "qa",
        "uat",
        "sandbox",
        "local",
        "remote",
        "primary",
        "secondary",
        "replica",
        "backup",
        "read",
        "write",
        "internal",
        "external",
        "public",
        "private",
        "old",
        "new",
        "legacy",
        "beta",
        "alpha",
        "canary",
        "blue",
        "green",
        "eu",
        "us",
        "asia",
        "west",
        "east",
        "north",
        "south",
        "frontend",
        "backend",
        "admin",
    ]
)
_SYNONYMS = {
    "db": "database",
    "databases": "database",
    "postgres": "postgresql",
    "pg": "postgresql",
    "repo": "repository",
    "k8s": "kubernetes",
    "prod": "production",
    "dev": "development",
    "meeting": "meeting",
    "mtg": "meeting",
    "stand-up": "standup",
    "infra": "infrastructure",
    "env": "environment",
    "svc": "service",
}


@dataclass(frozen=True)
class Fact:
    """One value a line states: ``attribute`` (``port``, ``count:replica``...), the normalised
    ``value``, the ``subject`` words, and ``alternative`` (for "prefers X over Y": Y)."""

    attribute: str
    value: str
    subject: frozenset[str]
    change_cue: bool = False
    alternative: str | None = None


def _norm_word(word: str) -> str:
    word = word.strip("'-_").lower()
    word = _SYNONYMS.get(word, word)
    if len(word) > 4 and word.endswith("ies"):
        word = word[:-3] + "y"
    elif len(word) > 3 and word.endswith("s") and not word.endswith("ss"):
        word = word[:-1]
    return _SYNONYMS.get(word, word)


def _words(text: str) -> list[str]:
    return [_norm_word(w) for w in _WORD.findall(text.lower())]


def fact_text(line: str) -> str:
    """The statement of a Markdown line: bullet, task box and ``user:`` prefixes removed."""
    text = _LIST_PREFIX.sub("", line.strip())
    return _ROLE_PREFIX.sub("", text).strip()


def _masked(text: str, spans: list[tuple[int, int]]) -> str:
    chars = list(text)
    for start, end in spans:
        chars[start:end] = " " * (end - start)
    return "".join(chars)


def _norm_value(text: str) -> str:
    return " ".join(_words(text))


def _time_value(match: re.Match[str]) -> str | None:
    hour_text = match.group(1) or match.group(4)
    minute = int(match.group(2) or 0)
    suffix = (match.group(3) or match.group(5) or "").lower().replace(".", "")
    hour = int(hour_text)
    if suffix:
        if not 1 <= hour <= 12:
            return None
        hour = hour % 12 + (12 if suffix == "pm" else 0)
    if hour > 23 or minute > 59:
        return None
    return f"{hour:02d}:{minute:02d}"


def _raw_values(text: str) -> list[tuple[str, str, tuple[int, int], frozenset[str]]]:
    """``(attribute, value, span, attribute words)`` of every value in ``text``."""
    found: list[tuple[str, str, tuple[int, int], frozenset[str]]] = []
    taken: list[tuple[int, int]] = []

    def free(span: tuple[int, int]) -> bool:
        return all(span[1] <= s or span[0] >= e for s, e in taken)

    def add(attribute: str, value: str, span: tuple[int, int], words: str = "") -> None:
        if free(span):
            taken.append(span)
            found.append((attribute, value, span, frozenset(words.split())))

    for m in _PORT.finditer(text):
        add("port", str(int(m.group(1))), m.span(), "port")
    for m in _HOST_PORT.finditer(text):
        add("port", str(int(m.group(1))), m.span(1), "port")
    for m in _ISO_DATE.finditer(text):
        add("date", f"{int(m.group(2)):02d}-{int(m.group(3)):02d}", m.span(), "date")
    for m in _MONTH_DAY.finditer(text):
        month = _MONTHS[(m.group(1) or m.group(4)).lower().rstrip(".")]
        day = int(m.group(2) or m.group(3))
        if 1 <= day <= 31:
            add("date", f"{month:02d}-{day:02d}", m.span(), "date")
    for m in _TIME.finditer(text):
        value = _time_value(m)
        if value is not None:
            add("time", value, m.span(), "time")
    for m in _WEEKDAY.finditer(text):
        add("weekday", m.group(1).lower(), m.span(), "day weekday")
    for m in _COUNT.finditer(text):
        noun = _norm_word(m.group(2))
        if noun in _STOP or noun in _VERBS or noun in _MONTHS or noun in ("am", "pm"):
            continue
        add(f"count:{noun}", str(int(m.group(1))), m.span(), noun)
    for m in _OWNER.finditer(text):
        name = next(g for g in m.groups() if g)
        if _norm_word(name.split()[0]) in _STOP:
            continue
        span = m.span(next(k for k in "abcd" if m.group(k)))
        add("owner", _norm_value(name), span, "owner owned own maintained maintain lead led")
        taken.append(m.span())
    return found


def _preferences(text: str, change: bool) -> list[Fact]:
    m = _PREFERRED.search(text)
    if m is not None:
        what = m.group("what")
        subject = _subject(_masked(text, [m.span()]), frozenset()) | frozenset(_words(what))
        return [Fact(f"preference:{_norm_value(what)}", _norm_value(m["value"]), subject, change)]
    m = _PREFERS.search(text)
    if m is None:
        return []
    subject = _subject(text[: m.start()], frozenset())
    if m["what"]:
        subject |= frozenset(_words(m["what"]))
    other = _norm_value(m["other"]) if m["other"] else None
    return [Fact("preference", _norm_value(m["value"]), subject, change, other)]


def _subject(text: str, attribute_words: frozenset[str]) -> frozenset[str]:
    return frozenset(
        w
        for w in _words(text)
        if w not in _STOP
        and w not in _VERBS
        and w not in attribute_words
        and not w.isdigit()
        and w not in _UNITS
    )


@lru_cache(maxsize=8192)
def facts_of(line: str) -> tuple[Fact, ...]:
    """The facts ``line`` states (see the module docstring); none for negated or past lines,
    headings, table rows and lines of code."""
    text = fact_text(line)
    if not text or text.startswith(("#", "|", "```", "~~~", ">")) or len(text) > 400:
        return ()
    if _NEGATED.search(text) or _PAST.search(text):
        return ()
    change = _CHANGE.search(text) is not None
    if re.search(r"\bprefer|\bfavou?rite\b", text, re.I):
        return tuple(_preferences(text, change))
    values = _raw_values(text)
    by_attribute: dict[str, list[tuple[str, tuple[int, int], frozenset[str]]]] = {}
    for attribute, value, span, words in values:
        by_attribute.setdefault(attribute, []).append((value, span, words))
    masked = _masked(text, [span for _, _, span, _ in values])
    facts: list[Fact] = []
    for attribute, found in by_attribute.items():
        if len({value for value, _, _ in found}) != 1:
            continue  # two values of one attribute: which one would a new value replace?
        words = frozenset().union(*(w for _, _, w in found))
        subject = _subject(masked, words)
        if subject:
            facts.append(Fact(attribute, found[0][0], subject, change))
    return tuple(facts)


def same_subject(a: frozenset[str], b: frozenset[str]) -> bool:
    """Equal word sets, or one more word on one side that is no qualifier (and at least two
    words shared)."""
    if a == b:
        return True
    small, large = (a, b) if len(a) <= len(b) else (b, a)
    extra = large - small
    return small <= large and len(small) >= 2 and len(extra) == 1 and not extra & _QUALIFIERS


def supersedes(new: Fact, old: Fact) -> bool:
    """Whether ``new`` states a new value for what ``old`` says (see the module docstring)."""
    if new.attribute != old.attribute or new.value == old.value:
        return False
    if not same_subject(new.subject, old.subject):
        return False
    if new.attribute == "preference":
        reverses = new.value == old.alternative or new.alternative == old.value
        same_kind = bool(set(new.value.split()) & set(old.value.split()))
        return reverses or (new.change_cue and same_kind)
    return True


def superseding_pairs(new_line: str, old_line: str) -> list[tuple[Fact, Fact]]:
    """The ``(new fact, old fact)`` pairs by which ``new_line`` supersedes ``old_line``."""
    return [
        (new, old)
        for new in facts_of(new_line)
        for old in facts_of(old_line)
        if supersedes(new, old)
    ]
