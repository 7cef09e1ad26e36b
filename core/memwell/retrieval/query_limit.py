"""The query-length cap (``query.max_chars``) that every backend applies before searching.

A query longer than the cap is cut to its first ``max_chars`` characters, so a pasted
document costs no more than a long question: the keyword query keeps its first terms anyway
(:data:`memwell.retrieval.fts_query.MAX_TERMS`) and embedding models read a bounded input.
The cut is reported: ``status().query_max_chars`` holds the cap, and ``memory_search``
payloads and ``memwell search`` carry a warning whenever a query was cut.
"""

from __future__ import annotations

from memwell.contract.config import DEFAULT_MAX_QUERY_CHARS, MAX_QUERY_CHARS_LIMIT

__all__ = ["DEFAULT_MAX_QUERY_CHARS", "MAX_QUERY_CHARS_LIMIT", "bound_query", "truncation_warning"]


def bound_query(query: str, max_chars: int) -> str:
    """``query`` stripped, cut to its first ``max_chars`` characters, stripped again."""
    text = query.strip()
    return text if len(text) <= max_chars else text[:max_chars].rstrip()


def truncation_warning(query: str, max_chars: int | None) -> str | None:
    """The warning for a query :func:`bound_query` cuts, or ``None`` when it is not cut."""
    length = len(query.strip())
    if max_chars is None or length <= max_chars:
        return None
    return (
        f"The query has {length:,} characters; only its first {max_chars:,} were searched "
        "(query.max_chars)."
    )
