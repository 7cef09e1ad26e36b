""":class:`SearchOptions`: a search's options, one immutable record passed down the chain."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import msgspec


class SearchOptions(msgspec.Struct, frozen=True, kw_only=True):
    """The options of a search as its caller gave them: the keyword arguments of
    :meth:`~memwell.contract.manager.MemorySearchManager.search` (``None``: the configured
    default; ``sources=None``: every source the backend indexes).

    The outermost layer builds it once (:meth:`of`, in
    :class:`~memwell.contract.manager.BatchSearchMixin`), and every layer below (the recall
    cache, the rerank stage, the fallback, :class:`~memwell.runtime.backend.MemoryBackend`)
    passes the same object down with the queries; the backend resolves it into one
    :class:`~memwell.runtime.backend.SearchRequest` per query. A layer that needs other options
    for the layer below (the rerank stage asks for more candidates) derives them with
    :func:`msgspec.structs.replace`.
    """

    max_results: int | None = None
    min_score: float | None = None
    session_key: str | None = None
    sources: frozenset[str] | None = None

    @classmethod
    def of(
        cls,
        *,
        max_results: int | None = None,
        min_score: float | None = None,
        session_key: str | None = None,
        sources: Sequence[str] | None = None,
    ) -> SearchOptions:
        """The record of :meth:`~memwell.contract.manager.MemorySearchManager.search`'s
        keyword arguments."""
        return cls(
            max_results=max_results,
            min_score=min_score,
            session_key=session_key,
            sources=None if sources is None else frozenset(sources),
        )

    def keywords(self) -> dict[str, Any]:
        """The record as ``search`` keyword arguments, for a manager that takes only those
        (sources sorted, so the call does not depend on set order)."""
        return {
            "max_results": self.max_results,
            "min_score": self.min_score,
            "session_key": self.session_key,
            "sources": None if self.sources is None else sorted(self.sources),
        }
