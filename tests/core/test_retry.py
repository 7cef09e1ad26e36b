"""RetryPolicy: only rate limits, 429, 5xx and timeouts retry, judged by type and status code
(never by message text); 3 retries, doubling, jitter, cap."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from hypothesis import given
from hypothesis import strategies as st
from memwell.contract.errors import ProviderError
from memwell.providers.retry import RetryPolicy, is_retryable


class HttpError(Exception):
    def __init__(self, message: str, status_code: int) -> None:
        super().__init__(message)
        self.status_code = status_code


class ResponseError(Exception):
    """Like requests' and httpx's HTTP errors: the status is on ``response``."""

    def __init__(self, message: str, status_code: int) -> None:
        super().__init__(message)
        self.response = type("Response", (), {"status_code": status_code})()


class CodeError(Exception):
    def __init__(self, message: str, code: int) -> None:
        super().__init__(message)
        self.code = code


def failing(exc: BaseException, times: int, result: str = "ok") -> tuple[Callable[[], str], list]:
    calls: list[int] = []

    def fn() -> str:
        calls.append(1)
        if len(calls) <= times:
            raise exc
        return result

    return fn, calls


def policy(rand: float = 0.0, **kw: float) -> tuple[RetryPolicy, list[float]]:
    sleeps: list[float] = []
    return RetryPolicy(sleep=sleeps.append, rand=lambda: rand, **kw), sleeps  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "exc",
    [
        HttpError("Too Many Requests", 429),
        HttpError("server error", 500),
        HttpError("bad gateway", 502),
        HttpError("unavailable", 503),
        CodeError("grpc", 503),
        HttpError("request timeout", 408),
        ResponseError("overloaded", 503),
        TimeoutError("read timed out"),
        ConnectionResetError("connection reset by peer"),
        ProviderError("explicitly retryable", provider="openai", retryable=True),
    ],
)
def test_retryable_errors_retry_exactly_three_times(exc: BaseException) -> None:
    assert is_retryable(exc)
    retry, sleeps = policy()
    fn, calls = failing(exc, times=10)
    with pytest.raises(ProviderError) as info:
        retry.call(fn, provider="openai")
    assert len(calls) == 4  # one try + 3 retries
    assert sleeps == [0.5, 1.0, 2.0]
    assert info.value.provider == "openai"
    assert info.value.retryable is True


@pytest.mark.parametrize(
    "exc",
    [
        HttpError("bad request", 400),
        HttpError("unauthorized", 401),
        HttpError("forbidden", 403),
        HttpError("not found", 404),
        # the status code wins over retry-ish words in the text
        HttpError("rate limit text but a 400", 400),
        ResponseError("unprocessable", 422),
        ValueError("input is not a string"),
        # words in a message say nothing: only a typed error or a status code retries
        RuntimeError("rate limit reached for requests"),
        RuntimeError("Resource has been exhausted (e.g. check quota)"),
        RuntimeError("Request timed out"),
        RuntimeError("upstream returned 503"),
        KeyError("provider 429"),
        ProviderError("explicitly permanent (a 503 in the text)", retryable=False),
    ],
)
def test_permanent_errors_are_not_retried(exc: BaseException) -> None:
    assert not is_retryable(exc)
    retry, sleeps = policy()
    fn, calls = failing(exc, times=10)
    with pytest.raises(ProviderError) as info:
        retry.call(fn, provider="voyage")
    assert len(calls) == 1 and sleeps == []
    assert info.value.retryable is False
    assert "after" not in str(info.value)


def test_status_code_kept_and_cause_chained() -> None:
    retry, _ = policy()
    original = HttpError("unauthorized: bad key", 401)
    fn, _ = failing(original, times=1)
    with pytest.raises(ProviderError) as info:
        retry.call(fn, provider="gemini")
    assert info.value.status_code == 401
    assert info.value.__cause__ is original
    assert "gemini" in str(info.value) and "bad key" in str(info.value)


def test_provider_error_passes_through_unchanged() -> None:
    retry, sleeps = policy()
    original = ProviderError("quota", provider="mistral", retryable=True, status_code=429)
    fn, calls = failing(original, times=10)
    with pytest.raises(ProviderError) as info:
        retry.call(fn, provider="x")
    assert info.value is original
    assert len(calls) == 4 and len(sleeps) == 3


def test_success_after_transient_failures() -> None:
    retry, sleeps = policy()
    fn, calls = failing(HttpError("overloaded", 529), times=2, result="vectors")
    assert retry.call(fn, provider="p") == "vectors"
    assert len(calls) == 3 and sleeps == [0.5, 1.0]


def test_message_counts_attempts_after_retries() -> None:
    retry, _ = policy()
    fn, _ = failing(TimeoutError("slow"), times=10)
    with pytest.raises(ProviderError, match=r"after 4 attempts"):
        retry.call(fn, provider="p")


def test_max_jitter_is_twenty_percent() -> None:
    retry, sleeps = policy(rand=1.0)
    fn, _ = failing(HttpError("x", 500), times=10)
    with pytest.raises(ProviderError):
        retry.call(fn, provider="p")
    assert sleeps == pytest.approx([0.6, 1.2, 2.4])


@given(st.floats(min_value=0.0, max_value=0.999999))
def test_jitter_bounds(r: float) -> None:
    retry, sleeps = policy(rand=r)
    fn, _ = failing(HttpError("x", 500), times=10)
    with pytest.raises(ProviderError):
        retry.call(fn, provider="p")
    for base, slept in zip([0.5, 1.0, 2.0], sleeps, strict=True):
        assert base <= slept <= base * 1.2 + 1e-9


def test_each_wait_capped_at_eight_seconds() -> None:
    retry, sleeps = policy(rand=1.0, max_retries=7)
    fn, calls = failing(HttpError("x", 500), times=100)
    with pytest.raises(ProviderError):
        retry.call(fn, provider="p")
    assert len(calls) == 8
    assert sleeps == pytest.approx([0.6, 1.2, 2.4, 4.8, 8.0, 8.0, 8.0])
    assert max(sleeps) <= 8.0


def test_real_defaults() -> None:
    retry = RetryPolicy()
    assert (retry.max_retries, retry.base_delay, retry.max_delay, retry.jitter) == (
        3,
        0.5,
        8.0,
        0.2,
    )
