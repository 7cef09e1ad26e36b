"""Exponential backoff after failures, for ``qmd embed`` and the model-backed search modes."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

BACKOFF_BASE_SECONDS = 60.0
BACKOFF_CAP_SECONDS = 3600.0


class Backoff:
    """Exponential backoff after failures: ``base * 2**(n-1)`` seconds, capped."""

    def __init__(
        self,
        base: float = BACKOFF_BASE_SECONDS,
        cap: float = BACKOFF_CAP_SECONDS,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.base = base
        self.cap = cap
        self.clock = clock
        self.failures = 0
        self.until = 0.0
        self.last_error: str | None = None

    def active(self) -> bool:
        return self.clock() < self.until

    def fail(self, error: str) -> None:
        self.failures += 1
        self.until = self.clock() + min(self.cap, self.base * 2 ** (self.failures - 1))
        self.last_error = error

    def reset(self) -> None:
        self.failures = 0
        self.until = 0.0
        self.last_error = None

    def snapshot(self) -> dict[str, Any]:
        return {
            "failures": self.failures,
            "seconds_left": round(max(0.0, self.until - self.clock()), 1),
            "last_error": self.last_error,
        }
