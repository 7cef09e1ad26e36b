"""Retry policy for embedding calls (spec 3.6): only rate limits, 429, 5xx and timeouts retry."""

from __future__ import annotations

import random
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TypeVar

from .errors import ProviderError

T = TypeVar("T")

_RETRYABLE_TEXT = re.compile(
    r"(rate[_ ]limit|too many requests|\b429\b|resource has been exhausted|\b5\d\d\b|cloudflare|"
    r"tokens per day|timed out|timeout)",
    re.IGNORECASE,
)


def is_retryable(exc: BaseException) -> bool:
    """Whether an embedding error is worth retrying."""
    if isinstance(exc, ProviderError):
        return exc.retryable
    if isinstance(exc, TimeoutError):
        return True
    status = getattr(exc, "status_code", None) or getattr(exc, "code", None)
    if isinstance(status, int):
        return status == 429 or status >= 500
    return bool(_RETRYABLE_TEXT.search(str(exc)))


@dataclass
class RetryPolicy:
    """3 retries, 500 ms doubling, up to +20 % jitter, each wait capped at 8 s."""

    max_retries: int = 3
    base_delay: float = 0.5
    max_delay: float = 8.0
    jitter: float = 0.2
    sleep: Callable[[float], None] = field(default=time.sleep)
    rand: Callable[[], float] = field(default=random.random)

    def call(self, fn: Callable[[], T], *, provider: str) -> T:
        """Run ``fn``, retrying retryable failures; errors come out as :class:`ProviderError`."""
        attempt = 0
        while True:
            try:
                return fn()
            except Exception as exc:
                retryable = is_retryable(exc)
                if not retryable or attempt >= self.max_retries:
                    if isinstance(exc, ProviderError):
                        raise
                    suffix = f" (after {attempt + 1} attempts)" if attempt else ""
                    raise ProviderError(
                        f"embedding provider {provider!r} failed{suffix}: {exc}",
                        provider=provider,
                        retryable=retryable,
                        status_code=getattr(exc, "status_code", None),
                    ) from exc
                delay = self.base_delay * (2**attempt) * (1 + self.rand() * self.jitter)
                self.sleep(min(self.max_delay, delay))
                attempt += 1
