"""The backend contract: :class:`MemorySearchManager` and a base class with async wrappers."""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Callable, Sequence
from typing import Any, Protocol, TypeVar, runtime_checkable

from memwell.contract.models import (
    MemorySearchResult,
    MemoryStatus,
    ProbeResult,
    ReadFileResult,
    SyncProgress,
)
from memwell.contract.search_options import SearchOptions

ProgressCallback = Callable[[SyncProgress], None]
_T = TypeVar("_T")


async def _in_thread(fn: Callable[..., _T], *args: Any, **kwargs: Any) -> _T:
    """``asyncio.to_thread``; asyncio is imported here, not by every command that starts."""
    import asyncio

    return await asyncio.to_thread(fn, *args, **kwargs)


@runtime_checkable
class MemorySearchManager(Protocol):
    """What every search backend implements.

    Results come back sorted by descending score; a blank query returns ``[]``.
    ``read_file`` follows the core's safe-read rules and returns empty text for a missing file.
    """

    def search(
        self,
        query: str,
        *,
        max_results: int | None = None,
        min_score: float | None = None,
        session_key: str | None = None,
        sources: Sequence[str] | None = None,
    ) -> list[MemorySearchResult]: ...

    def read_file(
        self, rel_path: str, *, from_line: int | None = None, lines: int | None = None
    ) -> ReadFileResult: ...

    def status(self) -> MemoryStatus: ...

    def sync(
        self,
        *,
        reason: str = "manual",
        force: bool = False,
        progress: ProgressCallback | None = None,
    ) -> None: ...

    def probe_embedding(self) -> ProbeResult: ...

    def probe_vector(self) -> ProbeResult: ...

    def close(self) -> None: ...


class BaseMemoryManager:
    """Optional base class: async wrappers (run in a worker thread) and context management.

    Subclasses implement the synchronous methods of :class:`MemorySearchManager`.
    """

    def search(
        self,
        query: str,
        *,
        max_results: int | None = None,
        min_score: float | None = None,
        session_key: str | None = None,
        sources: Sequence[str] | None = None,
    ) -> list[MemorySearchResult]:
        raise NotImplementedError

    def read_file(
        self, rel_path: str, *, from_line: int | None = None, lines: int | None = None
    ) -> ReadFileResult:
        raise NotImplementedError

    def status(self) -> MemoryStatus:
        raise NotImplementedError

    def sync(
        self,
        *,
        reason: str = "manual",
        force: bool = False,
        progress: ProgressCallback | None = None,
    ) -> None:
        raise NotImplementedError

    def probe_embedding(self) -> ProbeResult:
        raise NotImplementedError

    def probe_vector(self) -> ProbeResult:
        raise NotImplementedError

    def close(self) -> None:
        """Release resources; idempotent. The default does nothing."""

    async def async_search(
        self,
        query: str,
        *,
        max_results: int | None = None,
        min_score: float | None = None,
        session_key: str | None = None,
        sources: Sequence[str] | None = None,
    ) -> list[MemorySearchResult]:
        """Async :meth:`search`."""
        return await _in_thread(
            self.search,
            query,
            max_results=max_results,
            min_score=min_score,
            session_key=session_key,
            sources=sources,
        )

    async def async_read_file(
        self, rel_path: str, *, from_line: int | None = None, lines: int | None = None
    ) -> ReadFileResult:
        """Async :meth:`read_file`."""
        return await _in_thread(self.read_file, rel_path, from_line=from_line, lines=lines)

    async def async_status(self) -> MemoryStatus:
        """Async :meth:`status`."""
        return await _in_thread(self.status)

    async def async_sync(
        self,
        *,
        reason: str = "manual",
        force: bool = False,
        progress: ProgressCallback | None = None,
    ) -> None:
        """Async :meth:`sync`."""
        await _in_thread(self.sync, reason=reason, force=force, progress=progress)

    async def async_close(self) -> None:
        """Async :meth:`close`."""
        await _in_thread(self.close)

    def __enter__(self) -> BaseMemoryManager:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class BatchSearchMixin:
    """``search`` and ``search_many`` as thin wrappers of :meth:`search_batch`: the one place
    where a search's keyword arguments become its :class:`SearchOptions` record, which the
    layers below then pass down as it is (:func:`search_batch`)."""

    def search(
        self,
        query: str,
        *,
        max_results: int | None = None,
        min_score: float | None = None,
        session_key: str | None = None,
        sources: Sequence[str] | None = None,
    ) -> list[MemorySearchResult]:
        """:meth:`search_batch` of ``[query]``."""
        return self.search_many(
            [query],
            max_results=max_results,
            min_score=min_score,
            session_key=session_key,
            sources=sources,
        )[0]

    def search_many(
        self,
        queries: Sequence[str],
        *,
        max_results: int | None = None,
        min_score: float | None = None,
        session_key: str | None = None,
        sources: Sequence[str] | None = None,
    ) -> list[list[MemorySearchResult]]:
        """The results of each query, in order (one :meth:`search_batch` for all)."""
        options = SearchOptions.of(
            max_results=max_results, min_score=min_score, session_key=session_key, sources=sources
        )
        return self.search_batch(queries, options)

    @abstractmethod
    def search_batch(
        self, queries: Sequence[str], options: SearchOptions
    ) -> list[list[MemorySearchResult]]:
        """The results of each query searched with ``options``, in order."""


def search_batch(
    manager: MemorySearchManager, queries: Sequence[str], options: SearchOptions
) -> list[list[MemorySearchResult]]:
    """Answer every query with ``options``, in order: ``manager.search_batch`` when it has
    one (memwell's layers and :class:`~memwell.runtime.backend.MemoryBackend` take the record
    as it is), else its ``search_many`` (one embedding batch, one pass over the index), else
    one ``search`` per query; those two get the record as keyword arguments (the one place it
    is unpacked, for managers written against the protocol alone)."""
    method = getattr(manager, "search_batch", None)
    if callable(method):
        answers: list[list[MemorySearchResult]] = method(queries, options)
        return answers
    keywords = options.keywords()
    method = getattr(manager, "search_many", None)
    if callable(method):
        answers = method(list(queries), **keywords)
        return answers
    return [manager.search(query, **keywords) for query in queries]


class DelegatingManager(BatchSearchMixin, BaseMemoryManager):
    """A layer in front of another manager (the recall cache, the rerank stage): every method
    it does not override, and every attribute it lacks, is the ``inner`` manager's."""

    def __init__(self, inner: MemorySearchManager) -> None:
        self._inner = inner

    @property
    def inner(self) -> MemorySearchManager:
        """The manager behind this layer."""
        return self._inner

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__") or name == "_inner":
            raise AttributeError(name)
        return getattr(self._inner, name)

    def search_batch(
        self, queries: Sequence[str], options: SearchOptions
    ) -> list[list[MemorySearchResult]]:
        return search_batch(self._inner, queries, options)

    def read_file(
        self, rel_path: str, *, from_line: int | None = None, lines: int | None = None
    ) -> ReadFileResult:
        return self._inner.read_file(rel_path, from_line=from_line, lines=lines)

    def status(self) -> MemoryStatus:
        return self._inner.status()

    def sync(
        self,
        *,
        reason: str = "manual",
        force: bool = False,
        progress: ProgressCallback | None = None,
    ) -> None:
        self._inner.sync(reason=reason, force=force, progress=progress)

    def probe_embedding(self) -> ProbeResult:
        return self._inner.probe_embedding()

    def probe_vector(self) -> ProbeResult:
        return self._inner.probe_vector()

    def close(self) -> None:
        self._inner.close()
