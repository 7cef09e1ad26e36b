""":class:`FallbackMemoryManager`: serve a primary backend until it fails, then the builtin one."""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import Any

from memwell.contract import recall_protocols as protocols
from memwell.contract.errors import BackendUnavailableError, PathNotAllowedError, ProviderError
from memwell.contract.manager import (
    BaseMemoryManager,
    BatchSearchMixin,
    DelegatingManager,
    MemorySearchManager,
    ProgressCallback,
    search_batch,
)
from memwell.contract.models import (
    FallbackStatus,
    MemorySearchResult,
    MemoryStatus,
    ProbeResult,
    ReadFileResult,
)
from memwell.contract.search_options import SearchOptions
from memwell.util.lazy_import import lazy_logger

log = lazy_logger(__name__)


class FallbackMemoryManager(BatchSearchMixin, BaseMemoryManager):
    """Wrap ``primary``; on its first failure switch to a lazily built fallback for good.

    The first exception from the primary (other than a refused path, which is the caller's
    mistake, and a provider error, which the fallback would share) closes the primary,
    records the reason, calls ``on_switch`` (``open_memory`` uses it to evict its cache
    entry, so the next ``open_memory`` tries the primary again) and builds the fallback
    exactly once. If the fallback cannot be built either (not installed, say), calls raise a
    :class:`~memwell.contract.errors.BackendUnavailableError` that names both failures, and
    :meth:`status` reports search as disabled instead of raising. ``primary=None`` with
    ``primary_error`` means the primary could not even be created.
    A fallback built after the caller synced (the primary) is synced once before it serves, so
    it answers from an index as fresh as the caller asked for.
    """

    def __init__(
        self,
        primary: MemorySearchManager | None,
        make_fallback: Callable[[], MemorySearchManager],
        *,
        primary_name: str = "primary",
        fallback_name: str = "builtin",
        primary_error: BaseException | None = None,
        on_switch: Callable[[FallbackMemoryManager], None] | None = None,
        workspace: str = "",
    ) -> None:
        self._primary = primary
        self._make_fallback = make_fallback
        self.primary_name = primary_name
        self.fallback_name = fallback_name
        self._on_switch = on_switch
        self.workspace = workspace
        self._fallback: MemorySearchManager | None = None
        self._lock = threading.RLock()
        self.last_error: BaseException | None = primary_error
        self.primary_failed = primary is None
        self.closed = False
        self._synced = False

    @property
    def active(self) -> MemorySearchManager | None:
        """The manager serving calls now: the primary until it fails, then the fallback
        (``None`` before the fallback is first built)."""
        return self._fallback if self.primary_failed else self._primary

    def _switch(self, exc: BaseException) -> None:
        with self._lock:
            if self.primary_failed:
                return
            self.primary_failed = True
            self.last_error = exc
            log.warning(
                "memwell backend %r failed (%s: %s); switching to %r",
                self.primary_name,
                type(exc).__name__,
                exc,
                self.fallback_name,
            )
            primary, self._primary = self._primary, None
        if primary is not None:
            try:
                primary.close()
            except Exception as close_exc:
                log.debug("closing failed primary raised %s", close_exc)
        if self._on_switch is not None:
            self._on_switch(self)

    def _get_fallback(self) -> MemorySearchManager:
        with self._lock:
            if self.closed:
                raise BackendUnavailableError("memory manager is closed")
            if self._fallback is None:
                try:
                    fallback = self._make_fallback()
                except Exception as exc:
                    raise BackendUnavailableError(self._no_fallback_reason(exc)) from (
                        self.last_error or exc
                    )
                self._fallback = fallback
                if self._synced:
                    fallback.sync(reason="fallback")
            return self._fallback

    def _no_fallback_reason(self, exc: BaseException) -> str:
        failed = (
            f"backend {self.primary_name!r} failed ({_describe(self.last_error)})"
            if self.last_error is not None
            else f"backend {self.primary_name!r} is unavailable"
        )
        return (
            f"{failed} and there is no fallback: backend {self.fallback_name!r} could not be "
            f"opened ({_describe(exc)})"
        )

    def _call(self, method: str, *args: Any, **kwargs: Any) -> Any:
        return self._call_with(lambda manager: getattr(manager, method)(*args, **kwargs))

    def _call_with(self, run: Callable[[MemorySearchManager], Any]) -> Any:
        primary = self._primary
        if not self.primary_failed and primary is not None:
            try:
                return run(primary)
            except (PathNotAllowedError, ProviderError):
                raise  # the caller's mistake, or the provider's (the fallback shares it)
            except Exception as exc:
                self._switch(exc)
        return run(self._get_fallback())

    def search_batch(
        self, queries: Sequence[str], options: SearchOptions
    ) -> list[list[MemorySearchResult]]:
        """Batch search on the active manager (:func:`~memwell.contract.manager.search_batch`)."""
        result: list[list[MemorySearchResult]] = self._call_with(
            lambda manager: search_batch(manager, queries, options)
        )
        return result

    def content_version(self) -> str | None:
        """The active manager's content version, tagged with its name (a switch changes it);
        ``None`` when it has none or no manager is active yet."""
        active = self.active
        version = protocols.content_version(active) if active is not None else None
        name = self.fallback_name if self.primary_failed else self.primary_name
        return None if version is None else f"{name}:{version}"

    def query_embedder(self) -> protocols.QueryEmbedder | None:
        """The active manager's query embedder, if any."""
        active = self.active
        return protocols.query_embedder(active) if active is not None else None

    def warm(self) -> None:
        """Warm the active manager up (building the fallback if the primary has failed)."""
        self._call_with(protocols.warm)

    def read_file(
        self, rel_path: str, *, from_line: int | None = None, lines: int | None = None
    ) -> ReadFileResult:
        result: ReadFileResult = self._call("read_file", rel_path, from_line=from_line, lines=lines)
        return result

    def sync(
        self,
        *,
        reason: str = "manual",
        force: bool = False,
        progress: ProgressCallback | None = None,
    ) -> None:
        self._call("sync", reason=reason, force=force, progress=progress)
        self._synced = True

    def probe_embedding(self) -> ProbeResult:
        result: ProbeResult = self._call("probe_embedding")
        return result

    def probe_vector(self) -> ProbeResult:
        result: ProbeResult = self._call("probe_vector")
        return result

    def status(self) -> MemoryStatus:
        """The active manager's status; after a switch it carries ``fallback`` and the reason."""
        if not self.primary_failed and self._primary is not None:
            try:
                return self._primary.status()
            except Exception as exc:
                self._switch(exc)
        reason = _describe(self.last_error)
        try:
            fallback = self._get_fallback()
        except BackendUnavailableError as exc:
            if self.closed:
                raise
            return MemoryStatus(
                backend=self.primary_name,
                provider="none",
                search_mode="disabled",
                workspace_dir=self.workspace,
                fallback=FallbackStatus(from_=self.primary_name, to=None, reason=str(exc)),
                custom={"fallback": {"disabled": True, "reason": str(exc)}},
            )
        status = fallback.status()
        return status.model_copy(
            update={
                "fallback": FallbackStatus(
                    from_=self.primary_name, to=self.fallback_name, reason=reason
                ),
                "custom": {**status.custom, "fallback": {"disabled": True, "reason": reason}},
            }
        )

    def close(self) -> None:
        """Close the primary and the fallback; idempotent."""
        with self._lock:
            if self.closed:
                return
            self.closed = True
            managers = [m for m in (self._primary, self._fallback) if m is not None]
            self._primary = self._fallback = None
        for manager in managers:
            try:
                manager.close()
            except Exception as exc:
                log.debug("close raised %s", exc)
        if self._on_switch is not None:
            self._on_switch(self)


def _describe(exc: BaseException | None) -> str:
    return f"{type(exc).__name__}: {exc}"


def unwrap(manager: object) -> object:
    """The backend manager serving calls behind ``open_memory``'s layers: the recall cache, the
    rerank stage and the :class:`FallbackMemoryManager` (its active manager, ``None`` before a
    fallback is built). Anything else is returned as it is.

    Example::

        if isinstance(unwrap(manager), JsonFileManager): ...
    """
    while True:
        if isinstance(manager, DelegatingManager):
            manager = manager.inner
        elif isinstance(manager, FallbackMemoryManager):
            manager = manager.active
        else:
            return manager
