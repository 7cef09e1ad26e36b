"""The supersession marker: how a Markdown line says that a newer line replaced it.

A superseded line keeps every byte it had and gains one suffix before its line ending::

    - Staging DB on port 5432. *(superseded 2026-06-03 by memory/2026-06-03.md#L4)*

The suffix is emphasised text, so every Markdown viewer shows it, the model reads it in a
snippet, and keyword search still finds the old fact. It is a suffix rather than a
``~~strikethrough~~`` wrapper on purpose: wrapping inserts bytes inside the line (after its
bullet, around code spans and ``~`` characters of its own, which then render differently),
while a suffix leaves the old line a literal prefix of the marked one, so
:func:`parse_superseded` gives back the original line exactly by slicing. The format is
``" *(superseded YYYY-MM-DD by <path>#L<n>[-L<m>])*"`` at the very end of the line (before
``\\n`` / ``\\r\\n``); the path is the workspace-relative memory file of the newer line.

This module is the one place that writes and reads the marker; other parts of memwell (search
ranking, promotion, the entity graph) use :func:`parse_superseded` and :func:`is_superseded`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import date

_MARKER = re.compile(
    r" \*\(superseded (?P<date>\d{4}-\d{2}-\d{2}) by (?P<path>.+?)#L(?P<start>\d+)"
    r"(?:-L(?P<end>\d+))?\)\*(?P<eol>\r?\n)?\Z"
)


@dataclass(frozen=True)
class Superseded:
    """A parsed marker: the original line (without its line ending), when it was superseded
    and where the newer line is (``path`` lines ``start_line``..``end_line``)."""

    original: str
    date: date
    path: str
    start_line: int
    end_line: int

    @property
    def citation(self) -> str:
        """``path#Ln`` or ``path#Ln-Lm``: the newer line."""
        if self.start_line == self.end_line:
            return f"{self.path}#L{self.start_line}"
        return f"{self.path}#L{self.start_line}-L{self.end_line}"


def marker(when: date, path: str, start_line: int, end_line: int | None = None) -> str:
    """The suffix that marks a line superseded by ``path`` lines ``start_line``..``end_line``."""
    if start_line < 1 or (end_line is not None and end_line < start_line):
        raise ValueError(f"bad line range {start_line}..{end_line}")
    if "\n" in path or "\r" in path or not path:
        raise ValueError(f"bad path {path!r}")
    span = f"L{start_line}" if end_line in (None, start_line) else f"L{start_line}-L{end_line}"
    return f" *(superseded {when.isoformat()} by {path}#{span})*"


def mark_line(
    line: str, when: date, path: str, start_line: int, end_line: int | None = None
) -> str:
    """``line`` with the marker added before its line ending (every other byte kept).

    :raises ValueError: the line is already superseded, or it holds a line break inside.
    """
    body, eol = split_eol(line)
    if "\n" in body or "\r" in body:
        raise ValueError("not a single line")
    if parse_superseded(line) is not None:
        raise ValueError("the line is superseded already")
    return body + marker(when, path, start_line, end_line) + eol


def split_eol(line: str) -> tuple[str, str]:
    """``line`` and its line ending (``"\\r\\n"``, ``"\\n"`` or ``""``)."""
    if line.endswith("\r\n"):
        return line[:-2], "\r\n"
    if line.endswith("\n"):
        return line[:-1], "\n"
    return line, ""


def parse_superseded(line: str) -> Superseded | None:
    """The marker of ``line`` (with or without its line ending), or ``None`` if it has none.

    Example::

        >>> m = parse_superseded("- Port 5432. *(superseded 2026-06-03 by memory/a.md#L4)*")
        >>> m.original, m.path, m.start_line
        ('- Port 5432.', 'memory/a.md', 4)
    """
    match = _MARKER.search(line)
    if match is None:
        return None
    try:
        when = date.fromisoformat(match["date"])
    except ValueError:
        return None
    start = int(match["start"])
    end = int(match["end"]) if match["end"] else start
    if start < 1 or end < start:
        return None
    return Superseded(line[: match.start()], when, match["path"], start, end)


def is_superseded(line: str) -> bool:
    """Whether ``line`` carries a supersession marker."""
    return parse_superseded(line) is not None


def superseded_lines(text: str) -> dict[int, Superseded]:
    """The superseded lines of ``text`` by 1-based line number."""
    found: dict[int, Superseded] = {}
    for number, line in enumerate(text.split("\n"), start=1):
        if "superseded" in line:
            parsed = parse_superseded(line.rstrip("\r"))
            if parsed is not None:
                found[number] = parsed
    return found
