"""The notes reflection reads: memory files as lines, with front matter and code left out."""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import date
from pathlib import Path

from memwell.retrieval.decay import date_from_path
from memwell.sources.discovery import decode_text, scan_memory_files
from memwell.util.slug import clean_slug

GENERATED_MARK = "generated: memwell reflect"
"""The front matter line of every page reflection writes."""
GENERATED_DIRS = ("memory/graph/", "memory/procedures/", "memory/meta/")
"""Where reflection writes its pages."""

_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")


def unique_slug(text: str, taken: set[str], fallback: str) -> str:
    """``text``'s slug (``fallback`` when it has none), ``-2``, ``-3``... when ``taken``; added
    to ``taken``."""
    base = clean_slug(text) or fallback
    slug, attempt = base, 1
    while slug in taken:
        attempt += 1
        slug = f"{base}-{attempt}"
    taken.add(slug)
    return slug


@dataclass(frozen=True)
class Note:
    """One memory file: its workspace path, its date (dated notes) and its lines.

    ``lines[i]`` is line ``i + 1`` of the file; lines of front matter and fenced code are
    ``""`` so that line numbers stay true and nothing in them is read as prose.
    """

    path: str
    day: date | None
    lines: tuple[str, ...]


def prose_lines(text: str) -> tuple[str, ...]:
    """``text``'s lines with front matter and fenced code blanked (numbering kept)."""
    lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    out = list(lines)
    start = 0
    if lines and lines[0].strip() == "---":
        for index in range(1, len(lines)):
            if lines[index].strip() in ("---", "..."):
                out[: index + 1] = [""] * (index + 1)
                start = index + 1
                break
    fence: str | None = None
    for index in range(start, len(lines)):
        match = _FENCE.match(lines[index])
        if fence is not None:
            out[index] = ""
            if match is not None and match.group(1)[0] == fence[0]:
                fence = None
        elif match is not None:
            fence = match.group(1)
            out[index] = ""
    return tuple(out)


def is_generated(path: str, text: str) -> bool:
    """A page reflection wrote (under its directories, with its front matter mark)."""
    head = text[:400]
    return path.startswith(GENERATED_DIRS) and head.startswith("---") and GENERATED_MARK in head


def read_notes(workspace: Path) -> list[Note]:
    """The workspace's memory files (``MEMORY.md``, ``memory/**.md``), sorted by path,
    without reflection's own pages: they are never evidence for themselves."""
    notes: list[Note] = []
    for found in scan_memory_files(workspace):
        try:
            with open(found.abs_path, "rb") as handle:
                text = decode_text(handle.read())
        except OSError:
            continue
        if is_generated(found.path, text):
            continue
        notes.append(Note(found.path, date_from_path(found.path), prose_lines(text)))
    return notes
