"""A trailing debounce: run an action once, a fixed time after the last of a burst of events."""

from __future__ import annotations

import threading
from collections.abc import Callable


class Debouncer:
    """Calls ``action`` in a daemon timer thread ``delay_s`` seconds after the last
    :meth:`touch`; each touch restarts the wait."""

    def __init__(self, delay_s: float, action: Callable[[], None]) -> None:
        self.delay_s = delay_s
        self.action = action
        self._lock = threading.Lock()
        self._timer: threading.Timer | None = None

    def touch(self) -> None:
        """(Re)start the wait."""
        with self._lock:
            if self._timer is not None:
                self._timer.cancel()
            self._timer = threading.Timer(self.delay_s, self.action)
            self._timer.daemon = True
            self._timer.start()

    def cancel(self) -> None:
        """Drop a pending call."""
        with self._lock:
            if self._timer is not None:
                self._timer.cancel()
                self._timer = None
