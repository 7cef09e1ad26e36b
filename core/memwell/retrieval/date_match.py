"""Date-aware matching: a query that names a date favours the notes dated then, and a
question that asks "when" favours text that says when.

Agent memory is mostly dated notes (``memory/YYYY-MM-DD*.md``, one per day or session), and
questions about it often name a date: "what did we decide on 13 October, 2023?", "what
happened in June?". Keyword search sees only the words ("october", "13"), which a note rarely
repeats in its text; the note's *date* is in its name. This module reads the dates a query
names (a day, or a month with or without its year; English month names) and tells how well a
note's date (:func:`~memwell.retrieval.decay.date_from_path`) matches one of them: a note
written on the day, or within :data:`DAY_WINDOW` days after it (people write about a day
afterwards), or in the month named. A query that names no date, or a note without a dated
name, matches nothing, so every other search ranks exactly as before.

A question that asks when something happened ("When did Ann go camping?", "How long has
...") is answered by the text that dates the event ("... went camping yesterday", "last
June", "in 2019"), and a note that only mentions the event without a time is a weaker
answer: :func:`asks_when` and :func:`mentions_time` tell both apart (English).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import date

import msgspec

from memwell.retrieval.candidate import Candidate
from memwell.retrieval.cjk import other_script
from memwell.retrieval.decay import date_from_path
from memwell.retrieval.parsed_query import per_query
from memwell.util.lazy_import import lazy_pattern

DAY_WINDOW = 7
"""A note dated up to this many days after a named day matches it."""

MONTHS = {
    name: number
    for number, names in enumerate(
        (
            ("january", "jan"),
            ("february", "feb"),
            ("march", "mar"),
            ("april", "apr"),
            ("may",),
            ("june", "jun"),
            ("july", "jul"),
            ("august", "aug"),
            ("september", "sep", "sept"),
            ("october", "oct"),
            ("november", "nov"),
            ("december", "dec"),
        ),
        start=1,
    )
    for name in names
}
"""English month names and abbreviations (lowercase) by month number."""
_MONTH = "(" + "|".join(sorted(MONTHS, key=len, reverse=True)) + r")\.?"
_DAY = r"([0-3]?[0-9])(?:st|nd|rd|th)?"
_YEAR = r"((?:19|20)[0-9]{2})"
# "13 October, 2023", "13th of Oct 2023" / "October 13, 2023", "Oct 13th" / "October 2023" /
# "in October"; ISO "2023-10-13". "May" alone is a verb as often as a month: a bare month
# name counts only after a preposition.
_ISO = lazy_pattern(r"\b" + _YEAR + r"-([01][0-9])-([0-3][0-9])\b")
_DAY_MONTH = lazy_pattern(r"\b" + _DAY + r"\s+(?:of\s+)?" + _MONTH + r"(?:,?\s+" + _YEAR + r")?\b")
_MONTH_DAY = lazy_pattern(r"\b" + _MONTH + r"\s+" + _DAY + r"(?:,?\s+" + _YEAR + r")?\b")
_MONTH_YEAR = lazy_pattern(r"\b" + _MONTH + r",?\s+" + _YEAR + r"\b")
_ASKS_WHEN = lazy_pattern(r"\s*(?:when|how long)\b", re.IGNORECASE)
_WEEKDAY = r"(?:mon|tues|wednes|thurs|fri|satur|sun)day"
_TIME_WORDS = lazy_pattern(
    r"\b(?:yesterday|today|tonight|tomorrow|ago|(?:last|next|this)\s+(?:week|month|year|night|"
    r"weekend|morning|summer|winter|spring|fall|autumn|tues|thurs)|" + _WEEKDAY + r"|"
    r"january|february|march|april|june|july|august|september|october|november|december|"
    r"(?:19|20)[0-9]{2})\b",
    re.IGNORECASE,
)
_BARE_MONTH = lazy_pattern(r"\b(?:in|during|of|since|until|early|late|mid)\s+" + _MONTH + r"\b")
_MONTH_STEMS = tuple(sorted({name[:3] for name in MONTHS}))
"""Every pattern above but ``_ISO`` matches one of these, and ``_ISO`` needs a digit and a
``-``: a query with neither names no date, and the patterns are neither compiled nor run."""


class DateSpan(msgspec.Struct, frozen=True):
    """A date a query names: a ``day`` (with or without its year) or a whole month."""

    month: int
    year: int | None = None
    day: int | None = None

    def matches(self, when: date) -> bool:
        """True if a note dated ``when`` is about this span (see the module docstring)."""
        if self.day is None:
            return when.month == self.month and self.year in (None, when.year)
        for year in (self.year,) if self.year is not None else (when.year, when.year - 1):
            try:
                named = date(year, self.month, self.day)
            except ValueError:
                continue
            if 0 <= (when - named).days <= DAY_WINDOW:
                return True
        return False


def _year(text: str | None) -> int | None:
    return int(text) if text else None


def query_dates(query: str) -> list[DateSpan]:
    """The dates ``query`` names, most specific first; ``[]`` when it names none."""
    return list(_query_dates(query))


@per_query
def _query_dates(query: str) -> tuple[DateSpan, ...]:
    text = query.lower()
    iso_like = "-" in text and any(c.isdigit() for c in text)
    if not iso_like and not any(stem in text for stem in _MONTH_STEMS):
        return ()
    return tuple(_read_dates(text))


def _read_dates(text: str) -> list[DateSpan]:
    spans: list[DateSpan] = []
    taken: list[tuple[int, int]] = []

    def add(span: DateSpan, where: tuple[int, int]) -> None:
        if any(where[0] < end and start < where[1] for start, end in taken):
            return  # inside a more specific date already read
        if span.day is not None and not 1 <= span.day <= 31:
            return
        taken.append(where)
        spans.append(span)

    for m in _ISO.finditer(text):
        if 1 <= int(m.group(2)) <= 12:
            add(DateSpan(int(m.group(2)), int(m.group(1)), int(m.group(3))), m.span())
    for m in _DAY_MONTH.finditer(text):
        add(DateSpan(MONTHS[m.group(2)], _year(m.group(3)), int(m.group(1))), m.span())
    for m in _MONTH_DAY.finditer(text):
        add(DateSpan(MONTHS[m.group(1)], _year(m.group(3)), int(m.group(2))), m.span())
    for m in _MONTH_YEAR.finditer(text):
        add(DateSpan(MONTHS[m.group(1)], int(m.group(2))), m.span())
    for m in _BARE_MONTH.finditer(text):
        add(DateSpan(MONTHS[m.group(1)]), m.span(1))
    return spans


@per_query
def asks_when(query: str) -> bool:
    """True for a question about a time: it starts with "when" or "how long"."""
    return _ASKS_WHEN.match(query) is not None


_RECENT = lazy_pattern(
    r"\b(?:yesterday|today|tonight|lately|recent(?:ly)?|latest|just now|this (?:morning|"
    r"afternoon|evening|week)|last (?:night|few days|couple of days|week)|past (?:few )?days|"
    r"(?:a|two|three|few) days ago)\b",
    re.IGNORECASE,
)


@per_query
def asks_recent(query: str) -> bool:
    """True for a question about recent events ("what happened yesterday", "lately", "this
    week"): the recall cache's temporal tier answers those."""
    return _RECENT.search(query) is not None


def mentions_time(text: str) -> bool:
    """True if ``text`` says when: a relative day or period ("yesterday", "last week", "two
    years ago"), a weekday, a month name (not "May", a verb as often) or a year."""
    return _TIME_WORDS.search(text) is not None


def boost_dates(
    items: Sequence[Candidate], query: str, date_boost: float, when_boost: float
) -> list[Candidate]:
    """Date-aware scores, in the same order (a copy of ``items`` when nothing applies).

    ``date_boost`` is added to each hit whose note's date matches a date ``query`` names,
    ``when_boost`` to each hit that :func:`mentions_time` when the query :func:`asks_when`
    (``[query.hybrid] date_boost`` and ``when_boost``, 0.2 each by default). The "when" test
    reads English, so a hit written in another script than the query
    (:func:`~memwell.retrieval.cjk.other_script`) never gains ``when_boost``: in Chinese text
    :func:`mentions_time` sees only a stray Latin month or spaced year, no sign of an answer.
    """
    spans = query_dates(query) if date_boost > 0 else []
    timed = when_boost > 0 and asks_when(query)
    if not spans and not timed:
        return list(items)
    matched: dict[str, bool] = {}
    out: list[Candidate] = []
    for item in items:
        if item.path not in matched:
            when = date_from_path(item.path) if spans else None
            matched[item.path] = when is not None and any(s.matches(when) for s in spans)
        extra = date_boost if matched[item.path] else 0.0
        if timed and mentions_time(item.text) and not other_script(query, item.text):
            extra += when_boost
        out.append(item.with_score(item.score + extra) if extra else item)
    return out
