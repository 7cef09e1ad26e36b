"""How-tos found in notes: a heading or a sentence announcing steps, then an ordered list.

The announcement is the nearest non-blank line above the list: a heading, or a sentence ending
in ``:``, that says it is a how-to (``how to``, ``steps``, ``procedure``, ``checklist``,
``runbook``, ``To deploy:``...). The list is two or more numbered items (``1.`` or ``1)``),
with their indented continuation lines; the steps are kept verbatim. The same steps found in
several notes make one procedure citing every source.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from memwell.organise.notes import Note, unique_slug
from memwell.util.slug import clean_slug

_ITEM = re.compile(r"^ {0,3}\d{1,3}[.)]\s+\S")
_CONTINUATION = re.compile(r"^(?: {2,}|\t)\S")
_HEADING = re.compile(r"^ {0,3}#{1,6}\s+(.*?)\s*#*\s*$")
_CUE = re.compile(
    r"\b(?:how (?:to|do|we|i)|steps?|step-by-step|procedure|process|checklist|instructions|"
    r"runbook|playbook|recipe|workflow)\b|^to \w+",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class Source:
    """Where a procedure's steps stand: the note and its lines (1-based, inclusive)."""

    path: str
    start_line: int
    end_line: int


@dataclass
class Procedure:
    """A how-to: its title, page slug, steps (verbatim lines) and the notes holding them."""

    title: str
    steps: tuple[str, ...]
    sources: list[Source] = field(default_factory=list)
    slug: str = ""


def _announcement(lines: Sequence[str], index: int) -> tuple[str, int] | None:
    """The how-to title announced above line ``index`` and its line number, if any."""
    above = index - 1
    while above >= 0 and not lines[above].strip():
        above -= 1
    if above < 0:
        return None
    text = lines[above].strip()
    heading = _HEADING.match(lines[above])
    if heading is not None:
        title = heading.group(1)
    elif text.endswith(":"):
        title = text.rstrip(":").strip()
        title = re.sub(r"^(?:[-*+]\s+)", "", title)
    else:
        return None
    return (title, above + 1) if title and _CUE.search(title) else None


def _list_end(lines: Sequence[str], start: int) -> tuple[int, int]:
    """The index after the ordered list starting at ``start``, and its item count."""
    index, items = start, 0
    while index < len(lines):
        line = lines[index]
        if _ITEM.match(line):
            items += 1
        elif not _CONTINUATION.match(line):
            break
        index += 1
    return index, items


def find_procedures(notes: Sequence[Note]) -> list[Procedure]:
    """Every how-to in ``notes``, one per distinct list of steps, sorted by slug."""
    by_steps: dict[tuple[str, ...], Procedure] = {}
    for note in notes:
        lines = note.lines
        index = 0
        while index < len(lines):
            if not _ITEM.match(lines[index]):
                index += 1
                continue
            end, items = _list_end(lines, index)
            announced = _announcement(lines, index) if items >= 2 else None
            if announced is not None:
                title, first = announced
                steps = tuple(line.rstrip() for line in lines[index:end])
                procedure = by_steps.setdefault(steps, Procedure(title, steps))
                procedure.sources.append(Source(note.path, first, end))
            index = end
    procedures = sorted(
        by_steps.values(), key=lambda p: (clean_slug(p.title), p.sources[0].path, p.steps)
    )
    taken: set[str] = set()
    for procedure in procedures:
        procedure.slug = unique_slug(procedure.title, taken, "procedure")
    return procedures
