"""Search hits for a person: provenance, line numbers and the lines that match the query."""

from __future__ import annotations

import re
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING

import click

from memwell.sources.paths import read_session_lines

if TYPE_CHECKING:
    from pathlib import Path

    from memwell.contract.manager import MemorySearchManager
    from memwell.contract.models import MemorySearchResult

MAX_LINES = 8
"""Lines shown per hit: the matching ones, else the chunk's first lines."""


def query_pattern(query: str) -> re.Pattern[str] | None:
    """Matches the query's keywords as word starts (so ``deploy`` marks ``deployment``)."""
    from memwell.retrieval.keywords import extract_keywords

    words = sorted(extract_keywords(query), key=len, reverse=True)
    if not words:
        return None
    return re.compile(r"(?<!\w)(?:" + "|".join(map(re.escape, words)) + r")\w*", re.IGNORECASE)


def hit_lines(
    rows: Sequence[tuple[int | None, str]], pattern: re.Pattern[str] | None
) -> tuple[list[tuple[int | None, str]], int]:
    """The rows (``(line number or None, text)``) to show and how many matches were left out:
    those matching ``pattern``, else the first non-blank ones."""
    matching = [row for row in rows if pattern is not None and pattern.search(row[1])]
    if matching:
        return matching[:MAX_LINES], max(0, len(matching) - MAX_LINES)
    return [row for row in rows if row[1].strip()][:MAX_LINES], 0


def _highlight(line: str, pattern: re.Pattern[str] | None) -> str:
    if pattern is None:
        return line
    return pattern.sub(lambda m: click.style(m.group(), fg="yellow", bold=True), line)


def hit_rows(
    hit: MemorySearchResult, manager: MemorySearchManager, sessions_dir: Path | None
) -> list[tuple[int | None, str]]:
    """The hit's full line range, numbered: a memory file's lines, or a transcript's messages
    with their JSONL line numbers (from ``sessions_dir``). Else the snippet (cut at 700
    characters), numbered only where its lines are the file's."""
    count = hit.end_line - hit.start_line + 1
    try:
        if hit.source == "sessions" and sessions_dir is not None:
            found = read_session_lines(sessions_dir, hit.path, hit.start_line, count)
            if found:
                return list(found)
        if hit.source == "memory":
            # Past the recall tracker: showing a hit is not reading it (grounding).
            reader = getattr(manager, "inner", manager)
            text = reader.read_file(hit.path, from_line=hit.start_line, lines=count).text
            if text:
                return [(hit.start_line + i, line) for i, line in enumerate(text.split("\n"))]
    except Exception:  # the snippet is still a correct, if shorter, view of the hit
        pass
    numbered = hit.source == "memory"
    return [
        (hit.start_line + i if numbered else None, line)
        for i, line in enumerate(hit.snippet.split("\n"))
    ]


def print_hits(
    results: Sequence[MemorySearchResult],
    query: str,
    manager: MemorySearchManager,
    sessions_dir: Path | None = None,
) -> None:
    """Print each hit: ``path:start-end  score``, then its matching lines, numbered (a
    transcript's by their JSONL lines, read from ``sessions_dir``)."""
    pattern = query_pattern(query)
    color = sys.stdout.isatty()
    for hit in results:
        click.secho(f"{hit.path}:{hit.start_line}-{hit.end_line}  score {hit.score:.3f}", bold=True)
        rows, left_out = hit_lines(hit_rows(hit, manager, sessions_dir), pattern)
        width = max((len(str(n)) for n, _ in rows if n is not None), default=0)
        for number, line in rows:
            shown = _highlight(line, pattern) if color else line
            prefix = f"{number:>{width}}: " if number is not None else ""
            click.echo(f"  {prefix}{shown}", color=color)
        if left_out:
            click.echo(f"  ... {left_out} more matching lines")
        click.echo()
