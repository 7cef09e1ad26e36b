"""Superseded facts rank below the facts that replaced them.

A chunk whose lines matching the query are superseded lines (marked by a write, see
:mod:`memwell.retrieval.supersede_marker`) is history: its score is multiplied by
:data:`SUPERSEDED_FACTOR`, and if the chunk holding the newer line is among the candidates it
is moved below that chunk. A query that asks about the past ("before", "previously", "used
to", "old"...) leaves both alone, so history questions find the old line first if it matches
best. Chunks without a marker (every chunk of a corpus nobody wrote through memwell) are
never touched: the check is a substring test.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from memwell.retrieval.candidate import Candidate
from memwell.retrieval.fts_query import query_terms
from memwell.retrieval.parsed_query import per_query
from memwell.util.lazy_import import lazy_pattern

#: Score multiplier of a chunk whose best match is a superseded line.
SUPERSEDED_FACTOR = 0.75
_NEEDLE = "*(superseded "
_HISTORY = lazy_pattern(
    r"\b(?:before|previous(?:ly)?|used to|formerly|former|old|older|earlier|originally|"
    r"history|historic(?:al)?|prior|past|changed from|until|superseded|outdated)\b",
    re.IGNORECASE,
)
_TERM = lazy_pattern(r"\w+")


@per_query
def asks_about_history(query: str) -> bool:
    """Whether ``query`` asks about an earlier state ("what port did staging use before?")."""
    return _HISTORY.search(query) is not None


def _successor(candidate: Candidate, terms: frozenset[str]) -> tuple[str, int] | None:
    """Where the newer line is, when the lines of ``candidate`` that best match ``terms`` are
    superseded ones; ``None`` when a current line matches as well or better."""
    from memwell.retrieval.supersede_marker import parse_superseded

    best_current = 0
    best_old: tuple[int, tuple[str, int] | None] = (0, None)
    for line in candidate.text.splitlines():
        marked = parse_superseded(line) if _NEEDLE in line else None
        text = marked.original if marked is not None else line
        hits = len(terms.intersection(t.lower() for t in _TERM.findall(text)))
        if marked is None:
            best_current = max(best_current, hits)
        elif hits > best_old[0]:
            best_old = (hits, (marked.path, marked.start_line))
    return best_old[1] if best_old[0] > best_current else None


def demote_superseded(ranked: Sequence[Candidate], query: str) -> list[Candidate]:
    """``ranked`` (best first) with history chunks demoted (see the module docstring)."""
    out = list(ranked)
    if not any(_NEEDLE in c.text for c in out) or asks_about_history(query):
        return out
    terms = query_terms(query)
    successors: dict[str, tuple[str, int]] = {}
    for index, candidate in enumerate(out):
        if _NEEDLE not in candidate.text:
            continue
        successor = _successor(candidate, terms)
        if successor is not None:
            successors[candidate.id] = successor
            out[index] = candidate.with_score(candidate.score * SUPERSEDED_FACTOR)
    out.sort(key=lambda c: c.score, reverse=True)
    for old_id, (path, line) in successors.items():
        position = next(i for i, c in enumerate(out) if c.id == old_id)
        newer = next(
            (
                i
                for i, c in enumerate(out)
                if c.path == path and c.start_line <= line <= c.end_line and c.id != old_id
            ),
            None,
        )
        if newer is not None and newer > position:
            old = out.pop(position)
            out.insert(newer, old.with_score(min(old.score, out[newer - 1].score)))
    return out
