"""Capitalised names in text, found without a model: the entity graph's mentions and the
trigger engine's entity routing share them.

A name is a run of capitalised words (``Ines Duarte``, ``Project Atlas``, ``PostgreSQL``); stop
words, weekdays and months split runs and are never names.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

from memwell.retrieval.stopwords import STOPWORDS_EN

_NOT_NAME_WORDS = (
    "monday tuesday wednesday thursday friday saturday sunday mondays tuesdays wednesdays "
    "thursdays fridays saturdays sundays january february march april may june july august "
    "september october november december todo note notes ok okay yes decided decision next "
    "maybe see update updated done fixed added fyi tbd wip q1 q2 q3 q4 am pm utc"
)
_NOT_NAMES = frozenset(_NOT_NAME_WORDS.split()) | STOPWORDS_EN
# Words starting with a letter that is not ASCII lowercase, one space apart, not glued to a
# path, a handle or a URL; whether each is a capitalised name word is checked in Python.
_CANDIDATE_RUN = re.compile(r"(?<![\w/.@#:'’-])[^\W\d_a-z][\w'’-]*(?: [^\W\d_a-z][\w'’-]*)*")
_SENTENCE_END = re.compile(r"[.!?]\s+$")


@dataclass(frozen=True)
class Mention:
    """A run of capitalised words at ``start:end`` of a text; ``initial`` when a sentence starts
    with it."""

    name: str
    start: int
    end: int
    initial: bool


def name_mentions(text: str) -> Iterator[Mention]:
    """Runs of capitalised words in ``text`` (stop words split them), with sentence starts."""
    for match in _CANDIDATE_RUN.finditer(text):
        position, first = match.start(), 0
        current: list[str] = []
        for word in [*match.group().split(" "), ""]:
            name = word[:-2] if word.endswith(("'s", "’s")) else word.rstrip("'’-")
            if len(name) >= 2 and name[0].isupper() and name.lower() not in _NOT_NAMES:
                first = first if current else position
                current.append(name)
            elif current:
                before = text[:first]
                initial = not before.strip() or _SENTENCE_END.search(before) is not None
                joined = " ".join(current)
                yield Mention(joined, first, first + len(joined), initial)
                current = []
            position += len(word) + 1


def name_runs(text: str) -> list[str]:
    """The capitalised names in a short text such as a query, sentence starts included."""
    return [mention.name for mention in name_mentions(text)]
