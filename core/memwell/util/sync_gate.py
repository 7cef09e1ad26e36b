"""One scan at a time, and no request lost: a sync asked for during a scan gets a new scan."""

from __future__ import annotations

import threading
from collections.abc import Callable


class SyncGate:
    """Serialises scans and coalesces the requests that arrive while one runs.

    Every caller of :meth:`run` returns only after a scan that *started after its request*
    finished, and raises that scan's error. Requests made during a running scan share a
    single rerun after it (at most one pending), which is forced if any of them asked for
    force and covers the union of their sources (``None``: every source). The scan runs in
    the thread of one of the waiting callers.
    """

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._running = False
        self._started = 0
        self._finished = 0
        self._force = False
        self._sources: frozenset[str] | None = frozenset()
        self._error: BaseException | None = None

    def run(
        self,
        scan: Callable[[bool, frozenset[str] | None], None],
        *,
        force: bool = False,
        sources: frozenset[str] | None = None,
    ) -> None:
        """Run ``scan(force, sources)`` or wait for the scan that serves this request."""
        with self._cond:
            need = self._started + 1
            self._force = self._force or force
            if self._sources is not None:
                self._sources = None if sources is None else self._sources | sources
            while self._finished < need:
                if self._running:
                    self._cond.wait()
                    continue
                self._running = True
                self._started += 1
                number = self._started
                forced, self._force = self._force, False
                scope, self._sources = self._sources, frozenset()
                error: BaseException | None = None
                self._cond.release()
                try:
                    scan(forced, scope)
                except BaseException as exc:
                    error = exc
                finally:
                    self._cond.acquire()
                    self._running = False
                    self._finished = number
                    self._error = error
                    self._cond.notify_all()
            if self._error is not None:
                raise self._error

    def wait_idle(self, timeout: float) -> bool:
        """Wait until no scan runs (for close); false on timeout."""
        with self._cond:
            return self._cond.wait_for(lambda: not self._running, timeout)
