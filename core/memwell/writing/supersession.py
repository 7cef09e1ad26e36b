"""Finding the older lines a write supersedes, and marking them.

For each fact of the written lines (:func:`memwell.writing.facts.facts_of`), the memory is
searched (past the recall cache, so the lookup is never counted as a recall) for its subject
and attribute; every line of the memory files found is compared with the new line
(:func:`~memwell.writing.facts.superseding_pairs`). A candidate is an older, unmarked line of a
writable memory file, outside code fences, that is not one of the written lines. The writer
then marks the candidates (:func:`mark_lines`) or, in ``suggest`` mode, only returns them.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import date

from memwell.contract.manager import DelegatingManager, MemorySearchManager
from memwell.retrieval.supersede_marker import mark_line, parse_superseded, split_eol
from memwell.writing.facts import Fact, facts_of, superseding_pairs
from memwell.writing.results import Supersession

#: Hits looked at per new fact.
SEARCH_HITS = 12
_FENCE = ("```", "~~~")

Confirm = Callable[[str, str], bool]
"""Asked ``(old line, new line)`` before a candidate is kept (the text generator's check)."""


def _lines(text: str) -> list[str]:
    parts = text.split("\n")
    return [part + "\n" for part in parts[:-1]] + ([parts[-1]] if parts[-1] else [])


def _fenced(lines: Sequence[str]) -> set[int]:
    """0-based indexes of the lines inside (or opening/closing) code fences."""
    inside: set[int] = set()
    fence: str | None = None
    for index, line in enumerate(lines):
        stripped = line.strip()
        opener = next((f for f in _FENCE if stripped.startswith(f)), None)
        if fence is not None:
            inside.add(index)
            if opener == fence:
                fence = None
        elif opener is not None:
            fence = opener
            inside.add(index)
    return inside


def new_fact_lines(text: str, first_line: int) -> list[tuple[int, str]]:
    """``(line number, line)`` of the lines of written ``text`` (starting at ``first_line``)
    that state a fact, code fences left out."""
    lines = _lines(text)
    fenced = _fenced(lines)
    return [
        (first_line + index, split_eol(line)[0])
        for index, line in enumerate(lines)
        if index not in fenced and facts_of(line)
    ]


def _query(fact: Fact) -> str:
    attribute = fact.attribute.split(":")[-1]
    return " ".join(sorted(fact.subject)) + f" {attribute}"


def _searchable(manager: MemorySearchManager) -> MemorySearchManager:
    """``manager`` past its delegating layers (recall cache and tracking, rerank)."""
    while isinstance(manager, DelegatingManager):
        manager = manager.inner
    return manager


def find_candidates(
    manager: MemorySearchManager,
    read: Callable[[str], str | None],
    path: str,
    written: Sequence[tuple[int, str]],
    *,
    confirm: Confirm | None = None,
) -> list[Supersession]:
    """The older lines the ``written`` lines of ``path`` supersede.

    :param read: a memory file's text, or ``None`` when it is not writable.
    """
    found: dict[tuple[str, int], Supersession] = {}
    searcher = _searchable(manager)
    own = {number for number, _ in written}
    texts: dict[str, str | None] = {}
    for number, new_line in written:
        by = f"{path}#L{number}"
        paths: list[str] = []
        for fact in facts_of(new_line):
            hits = searcher.search(
                _query(fact), max_results=SEARCH_HITS, min_score=0.0, sources=["memory"]
            )
            paths += [hit.path for hit in hits if hit.path not in paths]
        if path not in paths:
            paths.append(path)
        for hit_path in paths:
            if hit_path not in texts:
                texts[hit_path] = read(hit_path)
            text = texts[hit_path]
            if text is None:
                continue
            lines = _lines(text)
            fenced = _fenced(lines)
            for index, line in enumerate(lines):
                old_line = split_eol(line)[0]
                key = (hit_path, index + 1)
                if index in fenced or key in found or parse_superseded(old_line) is not None:
                    continue
                if hit_path == path and index + 1 in own:
                    continue
                pairs = superseding_pairs(new_line, old_line)
                if not pairs or (confirm is not None and not confirm(old_line, new_line)):
                    continue
                new, old = pairs[0]
                found[key] = Supersession(
                    path=hit_path,
                    line=index + 1,
                    text=old_line,
                    by=by,
                    attribute=new.attribute,
                    old_value=old.value,
                    new_value=new.value,
                )
    return sorted(found.values(), key=lambda s: (s.path, s.line))


def mark_lines(text: str, marks: Sequence[Supersession], when: date) -> tuple[str, dict[int, int]]:
    """``text`` with each of ``marks`` (all of one file) marked, and the 1-based line each
    mark was written on, by its position in ``marks``.

    A mark whose line no longer holds its text is looked for elsewhere in the file (the one
    unmarked line equal to it); one not found, or found twice, is left out.
    """
    lines = _lines(text)
    done: dict[int, int] = {}
    for position, mark in enumerate(marks):
        index = mark.line - 1
        if not (0 <= index < len(lines) and split_eol(lines[index])[0] == mark.text):
            same = [i for i, line in enumerate(lines) if split_eol(line)[0] == mark.text]
            if len(same) != 1:
                continue
            index = same[0]
        target, _, span = mark.by.rpartition("#L")
        start = int(span.split("-")[0])
        if parse_superseded(lines[index]) is not None:
            continue
        lines[index] = mark_line(lines[index], when, target, start)
        done[position] = index + 1
    return "".join(lines), done
