"""Scoring for the ``jsonfile`` backend, built from memwell's shared retrieval blocks.

Keyword relevance is the share of the query's terms found in a chunk. Terms are memwell's
tokens minus its multilingual stop words, and CJK text is segmented with memwell's n-gram
segmentation, so Chinese or Japanese queries match without a tokenizer. Without vectors the
reference's keyword-only boost is added (coverage, density, path and length). Vector
relevance is the cosine similarity of the unit vectors the embedding runtime returns.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from memwell.plugin import (
    ALL_STOPWORDS,
    CJK_CLASS,
    Candidate,
    keyword_boost,
    segment_for_index,
    segment_query_terms,
    tokenize,
)
from memwell.plugin import query_terms as boost_terms

_CJK_RUN = re.compile(f"[{CJK_CLASS}]+")


@dataclass(frozen=True)
class Row:
    """A chunk ready for search: its identity, text and precomputed keyword terms."""

    id: str
    path: str
    start_line: int
    end_line: int
    text: str
    terms: frozenset[str]

    def candidate(self, *, text_score: float = 0.0, vector_score: float = 0.0) -> Candidate:
        return Candidate(
            id=self.id,
            path=self.path,
            start_line=self.start_line,
            end_line=self.end_line,
            text=self.text,
            text_score=text_score,
            vector_score=vector_score,
            score=max(text_score, vector_score),
        )


def text_terms(text: str) -> frozenset[str]:
    """Every term a chunk can be found by: its words, CJK unigrams and bigrams."""
    return frozenset(tokenize(segment_for_index(text)))


def query_terms(query: str) -> list[str]:
    """The distinct terms of a query: content words, then CJK bigrams (stop words dropped)."""
    words = tokenize(_CJK_RUN.sub(" ", query))
    terms = [w for w in words if w not in ALL_STOPWORDS] + segment_query_terms(query)
    return list(dict.fromkeys(terms))


def keyword_candidates(
    query: str, rows: Sequence[Row], limit: int, *, boost: bool
) -> list[Candidate]:
    """Chunks sharing at least one term with ``query``, best first.

    ``text_score`` is the share of query terms found; ``score`` adds :func:`keyword_boost`
    when ``boost`` is set (keyword-only mode), capped at 1.
    """
    terms = query_terms(query)
    if not terms:
        return []
    boosting = boost_terms(query)  # once per query, not once per hit
    hits = []
    for row in rows:
        matched = sum(term in row.terms for term in terms)
        if matched:
            hit = row.candidate(text_score=matched / len(terms))
            if boost:
                hit.score = min(1.0, hit.text_score + keyword_boost(boosting, row.text, row.path))
            hits.append(hit)
    hits.sort(key=lambda c: c.score, reverse=True)
    return hits[:limit]


def vector_candidates(
    query_vector: np.ndarray, rows: Sequence[Row], matrix: np.ndarray, limit: int
) -> list[Candidate]:
    """The ``limit`` chunks most similar to ``query_vector`` (cosine, clamped to [0, 1])."""
    if not rows or not query_vector.any():
        return []
    scores = np.clip(matrix @ query_vector, 0.0, 1.0)
    best = np.argsort(-scores, kind="stable")[:limit]
    return [rows[i].candidate(vector_score=float(scores[i])) for i in best]
