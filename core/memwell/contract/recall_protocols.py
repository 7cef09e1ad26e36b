"""The optional methods a backend implements to take part in recall caching and batch search.

None of them is part of :class:`~memwell.contract.manager.MemorySearchManager`; each helper here
asks for the method and degrades (caching off, semantic tier off, a loop) when it is missing.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from memwell.contract.errors import MemwellError
from memwell.contract.manager import MemorySearchManager, search_batch
from memwell.contract.models import MemorySearchResult
from memwell.contract.search_options import SearchOptions

if TYPE_CHECKING:
    from memwell.contract.embeddings import Matrix, Vector


@runtime_checkable
class QueryEmbedder(Protocol):
    """Embeds queries exactly as the backend's own search does, sharing its vectors.

    ``space`` names the vector space (it changes when the provider or model does); a vector
    computed here is reused by the backend's next search of the same text, so a query is
    never embedded twice.
    """

    @property
    def space(self) -> str: ...

    def embed(self, text: str) -> Vector: ...

    def embed_many(self, texts: Sequence[str]) -> Matrix: ...


def content_version(manager: MemorySearchManager) -> str | None:
    """``manager.content_version()``: a string that changes whenever the searchable content
    changes (any sync or write that altered the index, in this process or another); ``None``
    when the backend cannot tell, which turns recall caching off for it."""
    method = getattr(manager, "content_version", None)
    if not callable(method):
        return None
    version = method()
    return version if isinstance(version, str) else None


def query_embedder(manager: MemorySearchManager) -> QueryEmbedder | None:
    """``manager.query_embedder()``, or ``None`` when the backend has none (keyword-only
    mode, a backend that embeds queries out of process, or no provider could be selected:
    the search and status report that failure themselves)."""
    method = getattr(manager, "query_embedder", None)
    if not callable(method):
        return None
    try:
        embedder = method()
    except MemwellError:
        return None
    return embedder if isinstance(embedder, QueryEmbedder) else None


def search_many(
    manager: MemorySearchManager,
    queries: Sequence[str],
    *,
    max_results: int | None = None,
    min_score: float | None = None,
    session_key: str | None = None,
    sources: Sequence[str] | None = None,
) -> list[list[MemorySearchResult]]:
    """Answer every query, in order, in one batch when the manager can
    (:func:`~memwell.contract.manager.search_batch`), else one ``search`` per query."""
    options = SearchOptions.of(
        max_results=max_results, min_score=min_score, session_key=session_key, sources=sources
    )
    return search_batch(manager, queries, options)


def warm(manager: MemorySearchManager) -> None:
    """``manager.warm()`` when the backend has one: load the index and the model now."""
    method = getattr(manager, "warm", None)
    if callable(method):
        method()
