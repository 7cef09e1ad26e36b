"""The unit the ranking blocks pass around: one chunk with its partial scores."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class Candidate:
    """A chunk found by keyword and/or vector search.

    ``vector_score`` and ``text_score`` are in [0, 1]; ``score`` is the fused score.
    ``text`` is the chunk text (snippets are cut from it later); ``terms`` is its
    :func:`~memwell.retrieval.fts_query.chunk_terms` when the index stored them (``None``:
    computed from ``text`` when needed).
    """

    id: str
    path: str
    start_line: int
    end_line: int
    text: str
    source: str = "memory"
    vector_score: float = 0.0
    text_score: float = 0.0
    score: float = 0.0
    terms: str | None = None
