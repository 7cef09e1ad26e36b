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
    """``search`` as a batch of one: a manager whose :meth:`search_many` does the work."""

    def search(
        self,
        query: str,
        *,
        max_results: int | None = None,
        min_score: float | None = None,
        session_key: str | None = None,
        sources: Sequence[str] | None = None,
    ) -> list[MemorySearchResult]:
        """:meth:`search_many` of ``[query]``."""
        return self.search_many(
            [query],
            max_results=max_results,
            min_score=min_score,
            session_key=session_key,
            sources=sources,
        )[0]

    @abstractmethod
    def search_many(
        self,
        queries: Sequence[str],
        *,
        max_results: int | None = None,
        min_score: float | None = None,
        session_key: str | None = None,
        sources: Sequence[str] | None = None,
    ) -> list[list[MemorySearchResult]]:
        """The results of each query, in order."""


class DelegatingManager(BaseMemoryManager):
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

    def search(
        self,
        query: str,
        *,
        max_results: int | None = None,
        min_score: float | None = None,
        session_key: str | None = None,
        sources: Sequence[str] | None = None,
    ) -> list[MemorySearchResult]:
        return self._inner.search(
            query,
            max_results=max_results,
            min_score=min_score,
            session_key=session_key,
            sources=sources,
        )

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
