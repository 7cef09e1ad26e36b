"""Retry policy for embedding calls: only rate limits, 408, 429, 5xx and timeouts retry."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

import msgspec

from memwell.contract.errors import ProviderError

T = TypeVar("T")


def http_status(exc: BaseException) -> int | None:
    """The HTTP status an SDK exception carries: ``status_code`` (openai, mistral, ollama,
    requests' and httpx's ``response``), ``http_status`` (voyage) or ``code`` (google-genai,
    gRPC-style); ``None`` when it carries none."""
    response = getattr(exc, "response", None)
    for value in (
        getattr(exc, "status_code", None),
        getattr(exc, "http_status", None),
        getattr(exc, "code", None),
        getattr(response, "status_code", None),
    ):
        if isinstance(value, int) and not isinstance(value, bool) and 100 <= value <= 599:
            return value
    return None


def is_retryable(exc: BaseException) -> bool:
    """Whether an embedding error is worth retrying, judged by its type and status code.

    A :class:`ProviderError` says so itself (``retryable``); timeouts and dropped connections
    retry; an SDK error retries on HTTP 408, 429 and 5xx. Anything else does not, whatever its
    message says: a provider should raise a :class:`ProviderError` (see
    :func:`memwell.providers.remote.status_error`) for a failure that deserves a retry.
    """
    if isinstance(exc, ProviderError):
        return exc.retryable
    if isinstance(exc, (TimeoutError, ConnectionError)):
        return True
    status = http_status(exc)
    return status is not None and (status in (408, 429) or status >= 500)


def _random() -> float:
    """:func:`random.random`, imported at the first retry: a one-shot command rarely retries."""
    import random

    return random.random()


class RetryPolicy(msgspec.Struct):
    """3 retries, 500 ms doubling, up to +20 % jitter, each wait capped at 8 s."""

    max_retries: int = 3
    base_delay: float = 0.5
    max_delay: float = 8.0
    jitter: float = 0.2
    sleep: Callable[[float], None] = time.sleep
    rand: Callable[[], float] = _random

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
                        status_code=http_status(exc),
                    ) from exc
                delay = self.base_delay * (2**attempt) * (1 + self.rand() * self.jitter)
                self.sleep(min(self.max_delay, delay))
                attempt += 1
