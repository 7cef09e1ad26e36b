"""Provider selection, fallback, retries and normalisation, applied once for every provider.

Backends never talk to a provider directly: they use :class:`EmbeddingRuntime`, which picks
the provider lazily (``auto`` order, explicit choice, ``fallback``), retries transient failures,
returns L2-normalised float32 vectors and checks their dimensions.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

import msgspec

from memwell.contract.config import MemwellSettings, plugin_config
from memwell.contract.descriptors import EmbeddingProviderSpec, ProviderContext
from memwell.contract.embeddings import EmbeddingProvider, provider_key, to_unit_matrix
from memwell.contract.errors import ConfigError, ProviderError, ProviderUnavailableError
from memwell.contract.models import FallbackStatus
from memwell.providers.fallback_record import (
    FallbackRecord,
    clear_record,
    load_record,
    next_record,
    save_record,
)
from memwell.providers.retry import RetryPolicy
from memwell.registry.plugins import PluginRegistry
from memwell.retrieval.chunking import CHARS_PER_TOKEN
from memwell.retrieval.limits import batch_by_bytes, max_input_tokens
from memwell.util.lazy_import import lazy_logger, lazy_module

if TYPE_CHECKING:
    import numpy as np

    from memwell.contract.embeddings import Matrix, Vector
else:
    np = lazy_module("numpy")

log = lazy_logger(__name__)
T = TypeVar("T")

#: Request budget per embedding call for remote providers, and texts per local call.
REMOTE_BATCH_BYTES = 8000
LOCAL_BATCH_TEXTS = 64
#: Steps down the provider ladder: the configured provider, its fallback, keyword-only search.
LADDER_STEPS = 2


class BatchState(msgspec.Struct):
    """Batch-API health: two failures disable batching for the runtime's lifetime."""

    failures: int = 0
    limit: int = 2
    disabled: bool = False
    last_error: str | None = None

    def record_failure(self, exc: BaseException) -> None:
        self.failures += 1
        self.last_error = f"{type(exc).__name__}: {exc}"
        if self.failures >= self.limit or getattr(exc, "disable_batch", False):
            self.disabled = True


class Selection(msgspec.Struct):
    """The outcome of provider selection."""

    provider: EmbeddingProvider | None
    spec: EmbeddingProviderSpec | None
    requested: str
    unavailable_reason: str | None = None
    fallback: FallbackStatus | None = None


def _create(
    spec: EmbeddingProviderSpec, settings: MemwellSettings, workspace: Path, model: str
) -> EmbeddingProvider:
    cfg = plugin_config(spec.config_model, settings.providers.get(spec.id), f"providers.{spec.id}")
    ctx = ProviderContext(
        workspace=workspace, settings=settings, model=model or spec.default_model, plugin_config=cfg
    )
    try:
        return spec.create(ctx)
    except (ProviderError, ConfigError):
        raise
    except Exception as exc:  # a buggy plugin: name it, and let fallback and auto move on
        raise ProviderError(
            f"embedding provider {spec.id!r} failed to start: {type(exc).__name__}: {exc}",
            provider=spec.id,
        ) from exc


def _lookup(registry: PluginRegistry, name: str, key: str) -> EmbeddingProviderSpec:
    spec = registry.provider(name)
    if spec is None:
        hint = registry.unknown_name_hint("provider", name)
        raise ConfigError(
            f"unknown embedding provider {name!r} in config key {key!r} ({hint})",
            key=key,
        )
    return spec


def keyword_only(requested: str, reason: str) -> Selection:
    """The provider ladder's last rung: the configured provider and its fallback both
    failed, so searches run by keyword only (said in status as a provider fallback to
    ``none``)."""
    return _keyword_only_as(requested, f"{reason}; searching by keyword only")


def _keyword_only_as(requested: str, why: str) -> Selection:
    status = FallbackStatus(from_=requested, to="none", reason=why)
    return Selection(None, None, requested, why, fallback=status)


def select_provider(
    settings: MemwellSettings, registry: PluginRegistry, workspace: Path
) -> Selection:
    """Choose the embedding provider per settings.

    ``none`` gives keyword-only mode. ``auto`` tries providers with an ``auto_priority`` in
    ascending order, skipping those that raise :class:`ProviderUnavailableError`, and falls
    back to keyword-only mode. An explicit provider fails closed unless ``fallback`` is set;
    when the fallback fails too, the search is keyword-only (:func:`keyword_only`).
    """
    requested = settings.provider
    if requested == "none":
        return Selection(None, None, requested, "provider = 'none' (keyword-only mode)")
    if requested == "auto":
        reasons: list[str] = []
        for name in registry.auto_candidates("provider"):
            spec = registry.provider(name)  # imports only this candidate's plugin
            if spec is None:
                continue
            try:
                return Selection(
                    _create(spec, settings, workspace, settings.model), spec, requested
                )
            except ProviderUnavailableError as exc:
                reasons.append(f"{spec.id}: {exc}")
            except ProviderError as exc:
                log.warning("memwell: skipping embedding provider %r: %s", spec.id, exc)
                reasons.append(f"{spec.id}: {exc}")
        reason = "\n".join(reasons) or "No embedding provider available."
        return Selection(None, None, requested, reason)
    spec = _lookup(registry, requested, "provider")
    try:
        return Selection(_create(spec, settings, workspace, settings.model), spec, requested)
    except ProviderError as exc:
        if settings.fallback in ("none", requested):
            raise
        fb_spec = _lookup(registry, settings.fallback, "fallback")
        try:
            provider = _create(fb_spec, settings, workspace, "")
        except ProviderError as fb_exc:
            return keyword_only(requested, f"{exc}; fallback to {fb_spec.id} failed: {fb_exc}")
        status = FallbackStatus(from_=requested, to=fb_spec.id, reason=str(exc))
        return Selection(provider, fb_spec, requested, fallback=status)


def call_with_timeout(fn: Callable[[], T], seconds: float, *, provider: str, what: str) -> T:
    """Run ``fn`` in a worker thread and give up waiting after ``seconds``.

    A hung local model cannot be interrupted, but the caller is never blocked by it: the
    timeout raises a non-retryable :class:`ProviderError` (retrying a hung model only waits
    again) and the worker thread is left to finish or hang on its own (it is a daemon).
    """
    outcome: list[T] = []
    failure: list[BaseException] = []
    done = threading.Event()

    def run() -> None:
        try:
            outcome.append(fn())
        except BaseException as exc:
            failure.append(exc)
        finally:
            done.set()

    threading.Thread(target=run, name=f"memwell-{provider}-{what}", daemon=True).start()
    if not done.wait(seconds):
        raise ProviderError(
            f"local embedding {what} with provider {provider!r} timed out after {seconds:g} s",
            provider=provider,
        )
    if failure:
        raise failure[0]
    return outcome[0]


class EmbeddingRuntime:
    """Lazy, retrying, normalising access to the selected provider.

    Selection happens on first use; a failed selection is sticky (re-raised on every call)
    until :meth:`reset`. :meth:`activate_fallback` switches to the configured fallback at
    most once per runtime; the backend must then re-embed everything.

    When the fallback fails too, searches run by keyword only (:func:`keyword_only`) until
    ``fallback_retry_minutes`` have passed; then the next call selects from the top again.

    A backend that sets :attr:`state_path` (before the first selection) keeps a fallback with
    its index (:mod:`memwell.providers.fallback_record`): later runtimes go straight to the fallback
    until the retry time, then probe the primary with one query. Calls to local providers are
    bounded by ``local.batch_timeout_seconds`` and ``local.query_timeout_seconds``.
    """

    def __init__(
        self,
        settings: MemwellSettings,
        registry: PluginRegistry,
        workspace: Path,
        *,
        retry: RetryPolicy | None = None,
    ) -> None:
        self.settings = settings
        self.registry = registry
        self.workspace = workspace
        self.retry = retry or RetryPolicy()
        self._lock = threading.Lock()
        self._selection: Selection | None = None
        self._error: Exception | None = None
        self._fallback_used = False
        self._dims: int | None = None
        self.batch = BatchState()
        self.state_path: Path | None = None
        #: When keyword-only search (the ladder's last rung) gives way to a new selection.
        self._keyword_only_until: float | None = None

    def selection(self) -> Selection:
        """Select the provider on first call; re-raise a failed selection."""
        with self._lock:
            if self._error is not None:
                raise self._error
            until = self._keyword_only_until
            if until is not None and time.time() >= until:
                self._selection, self._keyword_only_until = None, None
                self._fallback_used, self._dims = False, None
            if self._selection is None:
                try:
                    selection = self._select()
                except Exception as exc:
                    self._error = exc
                    raise
                if selection.provider is None and selection.fallback is not None:
                    self._keyword_only_until = self._keyword_only_retry()
                self._selection = selection
            return self._selection

    def _retry_seconds(self) -> float:
        return self.settings.fallback_retry_minutes * 60

    def _keyword_only_retry(self) -> float:
        """When keyword-only search gives way to a new selection: the stored record's retry
        time, else ``fallback_retry_minutes`` from now."""
        record = self._record()
        if record is not None and record.keyword_only is not None:
            return record.retry_at
        return time.time() + self._retry_seconds()

    def _record(self) -> FallbackRecord | None:
        """The stored fallback for the configured provider pair, if any."""
        if self.state_path is None or self.settings.fallback in ("none", self.settings.provider):
            return None
        record = load_record(self.state_path)
        if record is None or not record.applies_to(self.settings.provider, self.settings.fallback):
            return None
        return record

    def _remember(self, previous: FallbackRecord | None, reason: str) -> FallbackRecord | None:
        if self.state_path is None:
            return None
        record = next_record(
            previous,
            self.settings.provider,
            self.settings.fallback,
            reason,
            self._retry_seconds(),
        )
        save_record(self.state_path, record)
        return record

    def _remember_keyword_only(self, why: str) -> None:
        """Keep the last rung with the index: the stored record (a new one when there is none
        or its retry time has come) marked keyword-only. Only a step taken after a failure to
        embed is kept (trying again costs calls and a reindex); when neither provider can even
        start (a missing key) nothing is kept, so a key set meanwhile works in the next
        process."""
        if self.state_path is None or self.settings.fallback in ("none", self.settings.provider):
            return
        previous = self._record()
        if previous is None or previous.due():
            previous = next_record(
                previous, self.settings.provider, self.settings.fallback, why, self._retry_seconds()
            )
        save_record(self.state_path, msgspec.structs.replace(previous, keyword_only=why))

    def _fallback_selection(self, record: FallbackRecord) -> Selection:
        spec = _lookup(self.registry, record.fallback, "fallback")
        provider = _create(spec, self.settings, self.workspace, "")
        status = FallbackStatus(from_=record.primary, to=spec.id, reason=record.describe())
        return Selection(provider, spec, self.settings.provider, fallback=status)

    def _select(self) -> Selection:
        """:func:`select_provider`, honouring and updating the stored fallback record."""
        record = self._record()
        if record is not None and not record.due() and record.keyword_only is not None:
            return _keyword_only_as(self.settings.provider, record.describe())
        if record is not None and not record.due():
            try:
                selection = self._fallback_selection(record)
            except ProviderError as exc:
                log.warning("memwell: recorded fallback %r fails too: %s", record.fallback, exc)
            else:
                self._fallback_used = True
                return selection
        selection = select_provider(self.settings, self.registry, self.workspace)
        if selection.provider is not None and selection.fallback is not None:
            # the primary could not even be created
            stored = self._remember(record, selection.fallback.reason)
            if stored is not None:
                selection.fallback = selection.fallback.model_copy(
                    update={"reason": stored.describe()}
                )
            self._fallback_used = True
            return selection
        if record is None or selection.provider is None:
            return selection
        try:  # the retry time has come: one probe, no retries, before re-embedding anything
            self._timed(selection, partial(selection.provider.embed_query, "ping"), "query")
        except Exception as exc:
            log.warning(
                "memwell: provider %r still fails (%s); keeping the fallback", record.primary, exc
            )
            stored = self._remember(record, f"{type(exc).__name__}: {exc}")
            self._fallback_used = True
            return self._fallback_selection(stored or record)
        log.info("memwell: provider %r works again; leaving the fallback", record.primary)
        if self.state_path is not None:
            clear_record(self.state_path)
        return selection

    def _timed(self, selection: Selection, fn: Callable[[], T], what: str) -> T:
        """``fn`` under the local timeouts when the provider runs in-process."""
        spec = selection.spec
        if spec is None or spec.transport != "local":
            return fn()
        local = self.settings.local
        seconds = local.query_timeout_seconds if what == "query" else local.batch_timeout_seconds
        return call_with_timeout(fn, seconds, provider=spec.id, what=what)

    @property
    def provider(self) -> EmbeddingProvider | None:
        """The active provider, or ``None`` in keyword-only mode."""
        return self.selection().provider

    @property
    def initialized(self) -> bool:
        return self._selection is not None or self._error is not None

    @property
    def error(self) -> Exception | None:
        """The sticky selection error, if selection failed."""
        return self._error

    @property
    def dims(self) -> int | None:
        provider = self.provider
        return self._dims or (provider.dims if provider is not None else None)

    def provider_key(self) -> str:
        return provider_key(self.provider)

    def max_input_tokens(self) -> int:
        provider = self.provider
        if provider is None:
            return max_input_tokens("none", "")
        return max_input_tokens(provider.id, provider.model, provider.max_input_tokens)

    def input_limit_bytes(self) -> int:
        """UTF-8 bytes a chunk may have before it is split for embedding.

        Remote APIs reject over-long input, so their limit counts one byte per token (a safe
        upper bound). Local models truncate silently instead, so there the budget is the
        usual 4 characters per token: a 256-token model gets 1024-byte pieces and nothing
        falls off the end of a chunk unembedded.
        """
        tokens = self.max_input_tokens()
        spec = self.selection().spec
        return (
            tokens * CHARS_PER_TOKEN if spec is not None and spec.transport == "local" else tokens
        )

    def _check_dims(self, matrix: Matrix, provider: EmbeddingProvider) -> None:
        dims = int(matrix.shape[1])
        expected = self._dims or provider.dims
        if dims == 0:
            raise ProviderError(
                f"provider {provider.id!r} returned empty vectors", provider=provider.id
            )
        if expected is not None and dims != expected:
            raise ProviderError(
                f"{provider.id!r} returned {dims}-dimensional vectors, expected {expected}",
                provider=provider.id,
            )
        self._dims = dims

    def _require(self) -> EmbeddingProvider:
        provider = self.provider
        if provider is None:
            raise ProviderUnavailableError("no embedding provider (keyword-only mode)")
        return provider

    def embed_query(self, text: str) -> Vector:
        """Embed a query; returns a unit float32 vector."""
        provider = self._require()
        selection = self.selection()
        raw = self.retry.call(
            partial(self._timed, selection, partial(provider.embed_query, text), "query"),
            provider=provider.id,
        )
        matrix = to_unit_matrix(np.asarray(raw, dtype=np.float32).reshape(1, -1))
        self._check_dims(matrix, provider)
        row: Vector = matrix[0]
        return row

    def prepare_queries(self) -> None:
        """Let the provider get ready for queries now (its optional ``prepare_queries()``,
        called by a session's warm-up); a no-op for providers without one."""
        prepare = getattr(self._require(), "prepare_queries", None)
        if callable(prepare):
            prepare()

    def embed_queries(self, texts: Sequence[str]) -> Matrix:
        """Embed several queries in one request when the provider can (``embed_queries``),
        else one by one; unit float32 rows, under the same retries and local timeouts."""
        provider = self._require()
        batch = getattr(provider, "embed_queries", None)
        if not callable(batch):
            return np.vstack([self.embed_query(text) for text in texts])
        selection = self.selection()
        raw = self.retry.call(
            partial(self._timed, selection, partial(batch, list(texts)), "query"),
            provider=provider.id,
        )
        matrix = to_unit_matrix(np.asarray(raw, dtype=np.float32).reshape(len(texts), -1))
        self._check_dims(matrix, provider)
        return matrix

    def embed_documents(self, texts: Sequence[str]) -> Matrix:
        """Embed documents; one unit float32 row per text.

        Uses the provider's batch API (``batch_embed``) when ``remote.batch.enabled`` and the
        provider has one; a failed batch falls back to normal requests, and two failures
        disable batching for this runtime.
        """
        provider = self._require()
        if not texts:
            return np.zeros((0, self.dims or 0), dtype=np.float32)
        batch_embed = getattr(provider, "batch_embed", None)
        if callable(batch_embed) and self.settings.remote.batch.enabled and not self.batch.disabled:
            try:
                matrix = self._checked(provider, batch_embed(list(texts)), len(texts))
            except Exception as exc:
                self.batch.record_failure(exc)
            else:
                self.batch.failures = 0
                return matrix
        spec = self.selection().spec
        if spec is not None and spec.transport == "local":
            groups = [
                list(range(i, min(i + LOCAL_BATCH_TEXTS, len(texts))))
                for i in range(0, len(texts), LOCAL_BATCH_TEXTS)
            ]
        else:
            groups = batch_by_bytes(texts, REMOTE_BATCH_BYTES)
        parts: list[Matrix] = []
        for group in groups:
            batch = [texts[i] for i in group]
            call = partial(
                self._timed, self.selection(), partial(provider.embed_batch, batch), "batch"
            )
            raw = self.retry.call(call, provider=provider.id)
            parts.append(self._checked(provider, raw, len(batch)))
        return np.vstack(parts)

    def _checked(
        self, provider: EmbeddingProvider, raw: Sequence[Sequence[float]] | Matrix, count: int
    ) -> Matrix:
        try:
            matrix = to_unit_matrix(raw) if len(raw) else np.zeros((0, 0), dtype=np.float32)
        except (TypeError, ValueError) as exc:  # ragged rows, non-numbers: the provider's fault
            raise ProviderError(
                f"provider {provider.id!r} returned malformed vectors: {exc}", provider=provider.id
            ) from exc
        if matrix.shape[0] != count:
            raise ProviderError(
                f"provider {provider.id!r} returned {matrix.shape[0]} vectors for {count} inputs",
                provider=provider.id,
            )
        self._check_dims(matrix, provider)
        return matrix

    def activate_fallback(self, reason: str) -> bool:
        """Step down the provider ladder after the provider in use failed with ``reason``:
        from the configured provider to its ``fallback`` (once), and from a fallback that
        fails (or cannot start) to keyword-only search. True if a step was taken; never
        without a fallback configured."""
        current = self.selection()
        fallback = self.settings.fallback
        if fallback in ("none", self.settings.provider) or current.provider is None:
            return False
        if self._fallback_used or (current.spec is not None and fallback == current.spec.id):
            self._switch(keyword_only(current.requested, f"fallback {fallback} failed: {reason}"))
            return True
        spec = _lookup(self.registry, fallback, "fallback")
        try:
            provider = _create(spec, self.settings, self.workspace, "")
        except ProviderError as exc:
            why = f"{reason}; fallback to {spec.id} failed: {exc}"
            self._switch(keyword_only(current.requested, why))
            return True
        stored = self._remember(self._record(), reason)
        from_id = current.spec.id if current.spec else current.requested
        status = FallbackStatus(
            from_=from_id, to=spec.id, reason=stored.describe() if stored else reason
        )
        self._switch(Selection(provider, spec, current.requested, fallback=status))
        return True

    def _switch(self, selection: Selection) -> None:
        if selection.provider is None and selection.fallback is not None:
            self._remember_keyword_only(selection.fallback.reason)
        with self._lock:
            self._selection = selection
            self._fallback_used = True
            self._dims = None
            if selection.provider is None:
                self._keyword_only_until = self._keyword_only_retry()
