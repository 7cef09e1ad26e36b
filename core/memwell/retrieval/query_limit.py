"""The query-length cap (``query.max_chars``) that every backend applies before searching.

A query longer than the cap is cut to its first ``max_chars`` characters, so a pasted
document costs no more than a long question: the keyword query keeps its first terms anyway
(:data:`memwell.retrieval.fts_query.MAX_TERMS`) and embedding models read a bounded input.
The cut is reported: ``status().query_max_chars`` holds the cap, and ``memory_search``
payloads and ``memwell search`` carry a warning whenever a query was cut.
"""

from __future__ import annotations

DEFAULT_MAX_QUERY_CHARS = 4000
"""Default ``query.max_chars``: about 1,000 tokens, inside every supported model's input."""

MAX_QUERY_CHARS_LIMIT = 32_768
"""Largest allowed ``query.max_chars`` (a qmd query is one argument, and Linux caps one
argument at 128 KiB; 32,768 characters are at most 128 KiB of UTF-8)."""


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
