"""Which lines a promotion writes into MEMORY.md, and in what form.

A line is promoted in its source's own form, one bullet per source line: a list item keeps its
text behind a ``- `` (indentation and its own marker dropped, a task box kept), any other line
becomes ``- <line>``; no line ever starts ``- - ``. A line is left out when MEMORY.md already
says it: the same words (list markers, case and punctuation aside), a near-duplicate (word-set
Jaccard of :data:`NEAR_DUPLICATE` or more), a superseded line of MEMORY.md, or a fact MEMORY.md
holds a newer value of.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from memwell.retrieval.supersede_marker import parse_superseded
from memwell.writing.facts import superseding_pairs

#: Word-set Jaccard similarity from which a line is a near-duplicate of one in MEMORY.md.
NEAR_DUPLICATE = 0.8
_MARKERS = re.compile(r"^\s*(?:(?:[-*+]|\d{1,9}[.)])\s+)+")
_WORD = re.compile(r"\w+")


def as_bullet(line: str) -> str:
    """``line`` as one Markdown bullet (see the module docstring)."""
    return "- " + _MARKERS.sub("", line.rstrip("\r\n")).strip()


def _words(line: str) -> tuple[str, ...]:
    marked = parse_superseded(line)
    text = marked.original if marked is not None else line
    return tuple(w.casefold() for w in _WORD.findall(_MARKERS.sub("", text)))


@dataclass(frozen=True)
class _Known:
    words: tuple[str, ...]
    line: str
    superseded: bool


class MemoryLines:
    """What MEMORY.md says, line by line, to check promoted lines against."""

    def __init__(self, text: str) -> None:
        self._known: list[_Known] = []
        self.add(text.splitlines())

    def add(self, lines: Iterable[str]) -> None:
        """Count ``lines`` as said (the lines a promotion is about to write, too)."""
        for line in lines:
            words = _words(line)
            if words:
                self._known.append(_Known(words, line, parse_superseded(line) is not None))

    def why_not(self, bullet: str) -> str | None:
        """Why ``bullet`` must not be written, or ``None`` if MEMORY.md does not say it yet."""
        words = _words(bullet)
        mine = set(words)
        for known in self._known:
            if known.words == words:
                return "superseded in MEMORY.md" if known.superseded else "already in MEMORY.md"
            theirs = set(known.words)
            if len(mine) >= 3 and len(mine & theirs) / len(mine | theirs) >= NEAR_DUPLICATE:
                return f"a near-duplicate of MEMORY.md's {known.line.strip()!r}"
            if not known.superseded and superseding_pairs(known.line, bullet):
                return f"MEMORY.md holds a newer value: {known.line.strip()!r}"
        return None
