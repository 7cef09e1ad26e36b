"""Shared machinery for remote (HTTP API) embedding providers.

Every remote provider plugin (``openai``, ``gemini``, ``mistral``, ``voyage``) builds on this
module so that key resolution, base-URL and header precedence, error mapping, response
validation, cache-key data and the batch-API polling loop have one implementation:

- :func:`resolve_endpoint` picks the API key (``providers.<id>.api_key``, then
  ``remote.api_key``, then the provider's environment variables), the base URL
  (``providers.<id>.base_url``, then ``remote.base_url``, then the provider default) and the
  headers (``remote.headers`` overlaid by ``providers.<id>.headers``).
- :class:`RemoteEmbeddingProvider` turns SDK exceptions into :class:`ProviderError` with the
  right ``retryable`` flag. Providers never retry: the core's
  :class:`~memwell.providers.retry.RetryPolicy` does.
- :class:`BatchingRemoteProvider` adds ``batch_embed`` for providers with a batch API, driven
  by a :class:`BatchRunner` (groups, concurrency, polling, timeouts).
"""

from __future__ import annotations

import json
import os
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Annotated, Any, TypeVar

import msgspec

from memwell.contract.config import BatchSettings
from memwell.contract.descriptors import EmbeddingProviderSpec, ProviderContext
from memwell.contract.embeddings import EmbeddingProvider, strip_model_prefix
from memwell.contract.errors import ProviderError, ProviderUnavailableError
from memwell.contract.records import Record
from memwell.retrieval.limits import max_input_tokens

S = TypeVar("S")

#: Headers that carry credentials; they never enter cache keys.
AUTH_HEADERS = frozenset({"authorization", "x-goog-api-key", "x-api-key", "api-key"})

#: HTTP statuses worth retrying besides 5xx.
RETRYABLE_STATUSES = frozenset({408, 429})

#: At most this many requests per batch job.
MAX_BATCH_REQUESTS = 50_000


class RemoteProviderConfig(Record, forbid_unknown_fields=True):
    """A remote provider's ``[providers.<id>]`` section; each value overrides ``[remote]``."""

    base_url: str | None = None
    api_key: str | None = None
    headers: dict[str, str] = msgspec.field(default_factory=dict)
    output_dimensionality: Annotated[int, msgspec.Meta(gt=0)] | None = None


@dataclass(frozen=True)
class RemoteEndpoint:
    """Where and how to reach a remote provider; ``base_url=None`` means the provider default."""

    api_key: str
    base_url: str | None
    headers: dict[str, str]
    timeout_seconds: float
    output_dimensionality: int | None = None


def _key_from(value: str | None, key_env: Sequence[str]) -> str | None:
    """A configured key; the name of one of ``key_env`` means "read that variable"."""
    if value is None or not value.strip():
        return None
    value = value.strip()
    if value in key_env:
        return os.environ.get(value, "").strip() or None
    return value


def merge_headers(base: Mapping[str, str], top: Mapping[str, str]) -> dict[str, str]:
    """``base`` overlaid by ``top``; header names compare case-insensitively."""
    overridden = {name.lower() for name in top}
    merged = {name: value for name, value in base.items() if name.lower() not in overridden}
    merged.update(top)
    return merged


def resolve_endpoint(ctx: ProviderContext, provider: str, key_env: Sequence[str]) -> RemoteEndpoint:
    """Resolve key, base URL, headers and timeout for ``provider`` from ``ctx``.

    :raises ProviderUnavailableError: no key anywhere; the message names the variables and the
        setting, and starts with "No API key found for provider" like the reference.
    """
    section = (
        ctx.plugin_config
        if isinstance(ctx.plugin_config, RemoteProviderConfig)
        else RemoteProviderConfig()
    )
    remote = ctx.settings.remote
    api_key = _key_from(section.api_key, key_env) or _key_from(remote.api_key, key_env)
    if api_key is None:
        api_key = next(
            (os.environ[name].strip() for name in key_env if os.environ.get(name, "").strip()),
            None,
        )
    if api_key is None:
        variables = " or ".join(key_env)
        raise ProviderUnavailableError(
            f"No API key found for provider {provider}: set {variables} "
            f"or providers.{provider}.api_key",
            provider=provider,
        )
    base_url = (section.base_url or remote.base_url or "").strip() or None
    return RemoteEndpoint(
        api_key=api_key,
        base_url=base_url.rstrip("/") if base_url else None,
        headers=merge_headers(remote.headers, section.headers),
        timeout_seconds=remote.timeout_seconds,
        output_dimensionality=section.output_dimensionality,
    )


def endpoint_create(
    provider: str, key_env: tuple[str, ...], build: Callable[[ProviderContext, RemoteEndpoint], S]
) -> Callable[[ProviderContext], S]:
    """A ``create`` that resolves the endpoint (raising
    :class:`ProviderUnavailableError` without a key) before ``build`` runs."""

    def create(ctx: ProviderContext) -> S:
        return build(ctx, resolve_endpoint(ctx, provider, key_env))

    return create


def remote_provider_spec(
    *,
    id: str,
    default_model: str,
    auto_priority: int,
    key_env: tuple[str, ...],
    build: Callable[[ProviderContext, RemoteEndpoint], EmbeddingProvider],
    description: str,
) -> EmbeddingProviderSpec:
    """An :class:`EmbeddingProviderSpec` whose ``create`` resolves the endpoint first.

    A missing key fails before ``build`` runs, so ``auto`` selection never imports an SDK
    for a provider it cannot use.
    """
    return EmbeddingProviderSpec(
        id=id,
        create=endpoint_create(id, key_env, build),
        default_model=default_model,
        transport="remote",
        auto_priority=auto_priority,
        config_model=RemoteProviderConfig,
        key_env=key_env,
        description=description,
    )


# --- errors -----------------------------------------------------------------------------------


def status_error(
    provider: str, status: int, message: str, *, what: str = "embeddings"
) -> ProviderError:
    """An HTTP error status; 408, 429 and 5xx are retryable, a 2xx means a bad payload.

    ``what`` names the kind of request in the message (``"text generation"`` for generators).
    """
    if 200 <= status < 300:
        return response_error(provider, message, what=what)
    retryable = status in RETRYABLE_STATUSES or status >= 500
    return ProviderError(
        f"{provider} {what} request failed (HTTP {status}): {message}",
        provider=provider,
        retryable=retryable,
        status_code=status,
    )


def transport_error(
    provider: str, exc: BaseException, *, what: str = "embeddings"
) -> ProviderError:
    """A timeout or connection failure; always retryable."""
    kind = "timed out" if "timeout" in type(exc).__name__.lower() else "connection failed"
    detail = str(exc) or type(exc).__name__
    return ProviderError(
        f"{provider} {what} request {kind}: {detail}", provider=provider, retryable=True
    )


def response_error(provider: str, message: str, *, what: str = "embeddings") -> ProviderError:
    """A response the client could not use (malformed JSON, missing fields); not retried."""
    return ProviderError(
        f"{provider} returned an invalid {what} response: {message}", provider=provider
    )


def map_sdk_exception(
    provider: str,
    exc: Exception,
    sdk_error: Callable[[Exception], ProviderError | None],
    *,
    what: str = "embeddings",
) -> ProviderError:
    """``exc`` as a :class:`ProviderError`: the SDK's own mapping first, then the generic one."""
    if isinstance(exc, ProviderError):
        return exc
    mapped = sdk_error(exc)
    if mapped is not None:
        return mapped
    if isinstance(exc, (TimeoutError, ConnectionError)):
        return transport_error(provider, exc, what=what)
    return response_error(provider, f"{type(exc).__name__}: {exc}", what=what)


class BatchError(ProviderError):
    """A batch-API job failed; ``disable_batch`` tells the runtime to stop batching at once."""

    def __init__(self, message: str, *, provider: str, disable_batch: bool = False):
        super().__init__(message, provider=provider)
        self.disable_batch = disable_batch


# --- providers --------------------------------------------------------------------------------


class RemoteEmbeddingProvider(ABC):
    """Base class of the remote providers.

    Subclasses set ``id``, ``model_prefixes`` and ``default_base_url``, and implement
    :meth:`_request` (one SDK call) and :meth:`_sdk_error` (SDK exception to
    :class:`ProviderError`). Dimensions are learned from the first response.
    """

    id: str
    model_prefixes: tuple[str, ...] = ()
    default_base_url: str = ""

    def __init__(self, ctx: ProviderContext, endpoint: RemoteEndpoint) -> None:
        self.endpoint = endpoint
        self.model = strip_model_prefix(ctx.model.strip(), self.model_prefixes)
        self.output_dimensionality = endpoint.output_dimensionality
        self.dims: int | None = endpoint.output_dimensionality
        self.max_input_tokens: int | None = max_input_tokens(self.id, self.model)
        self.base_url = (endpoint.base_url or self.provider_default_base_url()).rstrip("/")

    def provider_default_base_url(self) -> str:
        """The base URL used when none is configured."""
        return self.default_base_url

    @abstractmethod
    def _request(self, texts: list[str], *, query: bool) -> Sequence[Sequence[float] | None]:
        """Embed ``texts`` with one SDK call; ``query`` selects the query input type."""

    @abstractmethod
    def _sdk_error(self, exc: Exception) -> ProviderError | None:
        """Map an SDK exception; ``None`` leaves it to the generic mapping."""

    def embed_query(self, text: str) -> Sequence[float]:
        return self._call(lambda: self._accept(self._request([text], query=True), 1))[0]

    def embed_batch(self, texts: Sequence[str]) -> list[Sequence[float]]:
        batch = list(texts)
        if not batch:
            return []
        return self._call(lambda: self._accept(self._request(batch, query=False), len(batch)))

    def _call(self, fn: Callable[[], S]) -> S:
        """Run ``fn``, turning any SDK or transport exception into :class:`ProviderError`."""
        try:
            return fn()
        except ProviderError:
            raise
        except Exception as exc:
            raise map_sdk_exception(self.id, exc, self._sdk_error) from exc

    def _accept(
        self, vectors: Sequence[Sequence[float] | None], count: int
    ) -> list[Sequence[float]]:
        """Check a response (count, non-empty, one width) and learn the dimensions."""
        if len(vectors) != count:
            raise response_error(self.id, f"{len(vectors)} vectors for {count} inputs")
        rows = [vector if vector is not None else () for vector in vectors]
        widths = {len(row) for row in rows}
        if 0 in widths:
            raise response_error(self.id, "empty embedding vector")
        if len(widths) > 1:
            raise response_error(self.id, f"vectors of mixed widths {sorted(widths)}")
        (width,) = widths
        if self.dims is not None and width != self.dims:
            raise ProviderError(
                f"{self.id} returned {width}-dimensional vectors, expected {self.dims}",
                provider=self.id,
            )
        self.dims = width
        return rows

    def cache_key_data(self) -> dict[str, Any]:
        """Identity of the vector space: provider, base URL, model, non-auth headers, dims."""
        headers = sorted(
            [name.lower(), value]
            for name, value in self.endpoint.headers.items()
            if name.lower() not in AUTH_HEADERS
        )
        return {
            "provider": self.id,
            "base_url": self.base_url,
            "model": self.model,
            "headers": headers,
            "output_dimensionality": self.output_dimensionality,
        }


@dataclass
class BatchRunner:
    """Runs batch-API jobs: splits into groups, polls, enforces wait and timeout.

    ``sleep`` and ``clock`` are injectable so tests never wait for real.
    """

    provider: str
    wait: bool = True
    poll_interval_seconds: float = 2.0
    timeout_seconds: float = 3600.0
    concurrency: int = 2
    max_requests: int = MAX_BATCH_REQUESTS
    sleep: Callable[[float], None] = field(default=time.sleep)
    clock: Callable[[], float] = field(default=time.monotonic)

    @classmethod
    def from_settings(cls, provider: str, settings: BatchSettings) -> BatchRunner:
        return cls(
            provider=provider,
            wait=settings.wait,
            poll_interval_seconds=settings.poll_interval_ms / 1000,
            timeout_seconds=settings.timeout_minutes * 60,
            concurrency=settings.concurrency,
        )

    def run(
        self, texts: list[str], run_group: Callable[[list[str]], list[list[float]]]
    ) -> list[list[float]]:
        """Embed ``texts`` in groups of at most ``max_requests``, ``concurrency`` at a time."""
        groups = [
            texts[start : start + self.max_requests]
            for start in range(0, len(texts), self.max_requests)
        ]
        if len(groups) <= 1:
            return run_group(groups[0]) if groups else []
        with ThreadPoolExecutor(max_workers=min(self.concurrency, len(groups))) as pool:
            results = list(pool.map(run_group, groups))
        return [row for result in results for row in result]

    def wait_for(
        self,
        job: str,
        status: S,
        refresh: Callable[[], S],
        state_of: Callable[[S], str],
        *,
        done: frozenset[str],
        failed: frozenset[str],
        failure_detail: Callable[[S], str | None],
    ) -> S:
        """Poll ``refresh`` every ``poll_interval_seconds`` until ``status`` is in ``done``.

        :raises BatchError: on a terminal failure state (with ``failure_detail`` appended),
            when waiting is disabled and the job is not done, or after the timeout.
        """
        start = self.clock()
        while True:
            state = state_of(status)
            if state in done:
                return status
            if state in failed:
                detail = failure_detail(status)
                suffix = f": {detail}" if detail else ""
                raise BatchError(
                    f"{self.provider} batch {job} {state}{suffix}", provider=self.provider
                )
            if not self.wait:
                raise BatchError(
                    f"{self.provider} batch {job} submitted and still {state}; enable "
                    "remote.batch.wait to await completion",
                    provider=self.provider,
                    disable_batch=True,
                )
            if self.clock() - start >= self.timeout_seconds:
                raise BatchError(
                    f"{self.provider} batch {job} timed out after "
                    f"{self.timeout_seconds / 60:g} minutes (still {state})",
                    provider=self.provider,
                )
            self.sleep(self.poll_interval_seconds)
            status = refresh()


#: One parsed batch output line: ``(custom id, vector, error message)``.
BatchLine = tuple[str | None, Sequence[float] | None, str | None]


def _message(value: Any) -> str | None:
    if isinstance(value, Mapping):
        text = value.get("message")
        return str(text) if text else json.dumps(value)
    return str(value) if value else None


def parse_openai_batch_line(line: Mapping[str, Any]) -> BatchLine:
    """Parse an OpenAI-format batch output line (OpenAI and Voyage share it)."""
    custom_id = line.get("custom_id")
    error = _message(line.get("error"))
    response = line.get("response") or {}
    body = response.get("body") or {}
    status = response.get("status_code")
    if error is None and isinstance(status, int) and not 200 <= status < 300:
        error = f"HTTP {status}: {_message(body.get('error')) or json.dumps(body)}"
    data = body.get("data") or []
    vector = data[0].get("embedding") if data and isinstance(data[0], Mapping) else None
    return (str(custom_id) if custom_id is not None else None, vector, error)


def collect_batch_vectors(
    provider: str,
    job: str,
    lines: Iterable[str],
    count: int,
    parse_line: Callable[[Mapping[str, Any]], BatchLine],
) -> list[list[float]]:
    """Map JSONL output lines (custom id = input index) back to ``count`` vectors in order.

    Any per-line error, empty embedding, unknown id or missing line fails the job.
    """
    expected = {str(index) for index in range(count)}
    vectors: dict[str, list[float]] = {}
    errors: list[str] = []
    for raw in lines:
        if not raw.strip():
            continue
        try:
            record = json.loads(raw)
        except ValueError as exc:
            raise BatchError(
                f"{provider} batch {job} output is not JSON lines: {exc}", provider=provider
            ) from exc
        custom_id, vector, error = parse_line(record)
        if custom_id is None or custom_id not in expected:
            errors.append(f"unexpected custom id {custom_id!r}")
        elif error is not None:
            errors.append(f"{custom_id}: {error}")
        elif not vector:
            errors.append(f"{custom_id}: empty embedding")
        else:
            vectors[custom_id] = [float(x) for x in vector]
    if errors:
        raise BatchError(f"{provider} batch {job} failed: {'; '.join(errors)}", provider=provider)
    missing = expected - vectors.keys()
    if missing:
        raise BatchError(
            f"{provider} batch {job} is missing {len(missing)} embedding responses",
            provider=provider,
        )
    return [vectors[str(index)] for index in range(count)]


def jsonl(records: Iterable[Mapping[str, Any]]) -> bytes:
    """Encode batch request records as JSON lines."""
    return "".join(json.dumps(record) + "\n" for record in records).encode()


class BatchingRemoteProvider(RemoteEmbeddingProvider):
    """A remote provider with a batch API: the runtime calls :meth:`batch_embed`."""

    def __init__(self, ctx: ProviderContext, endpoint: RemoteEndpoint) -> None:
        super().__init__(ctx, endpoint)
        self.batch = BatchRunner.from_settings(self.id, ctx.settings.remote.batch)

    @abstractmethod
    def _run_batch(self, texts: list[str]) -> list[list[float]]:
        """Upload, create, poll and download one batch job of ``texts`` (custom ids = index)."""

    def batch_embed(self, texts: list[str]) -> list[Sequence[float]]:
        """Embed documents through the provider's batch API."""
        if not texts:
            return []
        return self._call(
            lambda: self._accept(self.batch.run(list(texts), self._run_batch), len(texts))
        )
