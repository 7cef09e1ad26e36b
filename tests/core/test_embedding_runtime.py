"""EmbeddingRuntime: provider selection, fallback, retries, normalisation, batching."""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest
from memwell.contract.config import MemwellSettings
from memwell.contract.descriptors import EmbeddingProviderSpec, ProviderContext
from memwell.contract.embeddings import provider_key
from memwell.contract.errors import ConfigError, ProviderError, ProviderUnavailableError
from memwell.contract.hookspecs import hookimpl
from memwell.providers import runtime as embedding_runtime
from memwell.providers.retry import RetryPolicy
from memwell.providers.runtime import (
    LOCAL_BATCH_TEXTS,
    REMOTE_BATCH_BYTES,
    EmbeddingRuntime,
    select_provider,
)
from memwell.registry.plugins import PluginRegistry


class HttpError(Exception):
    def __init__(self, message: str, status_code: int) -> None:
        super().__init__(message)
        self.status_code = status_code


class FakeProvider:
    """Vectors encode the text (its length and first character) and are not normalised."""

    def __init__(self, pid: str = "fake", model: str = "m", dims: int | None = 4) -> None:
        self.id = pid
        self.model = model
        self.dims = dims
        self.out_dims = dims or 4
        self.max_input_tokens: int | None = None
        self.batches: list[list[str]] = []
        self.queries: list[str] = []
        self.errors: list[BaseException] = []  # raised one per call before succeeding
        self.drop_one = False

    def _vec(self, text: str) -> list[float]:
        vec = [0.0] * self.out_dims
        vec[0] = float(len(text) + 1)
        vec[1 % self.out_dims] += float(ord(text[0]) if text else 1)
        return vec

    def embed_query(self, text: str) -> list[float]:
        self.queries.append(text)
        if self.errors:
            raise self.errors.pop(0)
        return self._vec(text)

    def embed_batch(self, texts: Sequence[str]) -> list[list[float]]:
        self.batches.append(list(texts))
        if self.errors:
            raise self.errors.pop(0)
        out = [self._vec(t) for t in texts]
        return out[:-1] if self.drop_one else out


class BatchProvider(FakeProvider):
    def __init__(self) -> None:
        super().__init__("batchy")
        self.batch_calls = 0
        self.batch_errors: list[BaseException] = []

    def batch_embed(self, texts: list[str]) -> list[list[float]]:
        self.batch_calls += 1
        if self.batch_errors:
            raise self.batch_errors.pop(0)
        return [self._vec(t) for t in texts]


class Spec:
    """Builds an EmbeddingProviderSpec whose ``create`` returns a provider or raises."""

    def __init__(
        self,
        pid: str,
        result: FakeProvider | BaseException,
        *,
        transport: str = "remote",
        auto_priority: int | None = None,
        default_model: str | None = None,
    ) -> None:
        self.result = result
        self.contexts: list[ProviderContext] = []
        self.spec = EmbeddingProviderSpec(
            id=pid,
            create=self.create,
            default_model=default_model or f"{pid}-default",
            transport=transport,  # type: ignore[arg-type]
            auto_priority=auto_priority,
        )

    def create(self, ctx: ProviderContext) -> FakeProvider:
        self.contexts.append(ctx)
        if isinstance(self.result, BaseException):
            raise self.result
        return self.result


def registry_of(*specs: Spec) -> PluginRegistry:
    @hookimpl
    def memwell_embedding_providers() -> list[EmbeddingProviderSpec]:
        return [s.spec for s in specs]

    reg = PluginRegistry(load_entry_points=False)
    reg.register(SimpleNamespace(memwell_embedding_providers=memwell_embedding_providers), "fx")
    return reg


def settings(**kw: Any) -> MemwellSettings:
    return MemwellSettings.model_validate(kw)


def no_sleep_policy() -> tuple[RetryPolicy, list[float]]:
    sleeps: list[float] = []
    return RetryPolicy(sleep=sleeps.append, rand=lambda: 0.0), sleeps


def runtime(reg: PluginRegistry, tmp_path: Path, **kw: Any) -> tuple[EmbeddingRuntime, list[float]]:
    retry, sleeps = no_sleep_policy()
    return EmbeddingRuntime(settings(**kw), reg, tmp_path, retry=retry), sleeps


def assert_unit_rows(matrix: np.ndarray) -> None:
    assert matrix.dtype == np.float32
    assert np.allclose(np.linalg.norm(matrix, axis=1), 1.0, atol=1e-5)


# ---------------------------------------------------------------- selection


def test_none_is_keyword_only(tmp_path: Path) -> None:
    ok = Spec("a", FakeProvider("a"), auto_priority=1)
    rt, _ = runtime(registry_of(ok), tmp_path, provider="none")
    sel = rt.selection()
    assert sel.provider is None and sel.spec is None
    assert sel.unavailable_reason is not None and "keyword-only" in sel.unavailable_reason
    assert ok.contexts == []  # nothing created
    assert rt.provider is None and rt.dims is None
    assert rt.provider_key() == provider_key(None)
    assert rt.max_input_tokens() > 0
    with pytest.raises(ProviderUnavailableError):
        rt.embed_query("x")
    with pytest.raises(ProviderUnavailableError):
        rt.embed_documents(["x"])


def test_auto_picks_lowest_priority_available(tmp_path: Path) -> None:
    first = Spec("first", ProviderUnavailableError("no FIRST_KEY"), auto_priority=0)
    second = Spec("second", FakeProvider("second"), auto_priority=5)
    third = Spec("third", FakeProvider("third"), auto_priority=9)
    never = Spec("never", FakeProvider("never"), auto_priority=None)
    reg = registry_of(third, never, second, first)
    sel = select_provider(settings(model="custom-m"), reg, tmp_path)
    assert sel.spec is second.spec and sel.provider is second.result
    assert sel.requested == "auto"
    assert len(first.contexts) == 1 and third.contexts == [] and never.contexts == []
    assert second.contexts[0].model == "custom-m"
    assert second.contexts[0].workspace == tmp_path


def test_auto_uses_default_model_when_unset(tmp_path: Path) -> None:
    only = Spec("only", FakeProvider("only"), auto_priority=1, default_model="only-v2")
    select_provider(settings(), registry_of(only), tmp_path)
    assert only.contexts[0].model == "only-v2"


def test_auto_with_nothing_available_records_every_reason(tmp_path: Path) -> None:
    a = Spec("a", ProviderUnavailableError("no A_KEY set"), auto_priority=1)
    b = Spec("b", ProviderUnavailableError("model b not downloaded"), auto_priority=2)
    sel = select_provider(settings(), registry_of(a, b), tmp_path)
    assert sel.provider is None
    assert sel.unavailable_reason is not None
    assert "a: no A_KEY set" in sel.unavailable_reason
    assert "b: model b not downloaded" in sel.unavailable_reason
    empty = select_provider(settings(), registry_of(), tmp_path)
    assert empty.provider is None and empty.unavailable_reason


def test_explicit_unknown_provider_is_config_error(tmp_path: Path) -> None:
    reg = registry_of(Spec("known", FakeProvider("known")))
    with pytest.raises(ConfigError) as info:
        select_provider(settings(provider="opneai"), reg, tmp_path)
    assert "'opneai'" in str(info.value) and "known" in str(info.value)
    assert info.value.key == "provider"


def test_explicit_provider_fails_closed_without_fallback(tmp_path: Path) -> None:
    err = ProviderUnavailableError("OPENAI_API_KEY is not set")
    reg = registry_of(Spec("openai", err), Spec("local", FakeProvider("local")))
    with pytest.raises(ProviderError) as info:
        select_provider(settings(provider="openai"), reg, tmp_path)
    assert info.value is err


def test_explicit_failing_provider_uses_fallback(tmp_path: Path) -> None:
    fb_provider = FakeProvider("local")
    fb = Spec("local", fb_provider, transport="local", default_model="mini")
    reg = registry_of(Spec("openai", ProviderError("401 bad key")), fb)
    sel = select_provider(
        settings(provider="openai", model="text-3", fallback="local"), reg, tmp_path
    )
    assert sel.provider is fb_provider and sel.spec is fb.spec
    assert sel.fallback is not None
    assert (sel.fallback.from_, sel.fallback.to) == ("openai", "local")
    assert "401 bad key" in sel.fallback.reason
    assert fb.contexts[0].model == "mini"  # the primary's model is not forced on the fallback


def test_both_failing_go_keyword_only_naming_both_reasons(tmp_path: Path) -> None:
    reg = registry_of(
        Spec("openai", ProviderError("openai quota exhausted")),
        Spec("gemini", ProviderUnavailableError("GEMINI_API_KEY missing")),
    )
    sel = select_provider(settings(provider="openai", fallback="gemini"), reg, tmp_path)
    assert sel.provider is None and sel.spec is None and sel.fallback is not None
    assert (sel.fallback.from_, sel.fallback.to) == ("openai", "none")
    message = sel.fallback.reason
    assert "openai quota exhausted" in message and "GEMINI_API_KEY missing" in message
    assert "keyword only" in message and sel.unavailable_reason == message


def test_unknown_fallback_is_config_error(tmp_path: Path) -> None:
    reg = registry_of(Spec("openai", ProviderError("down")))
    with pytest.raises(ConfigError) as info:
        select_provider(settings(provider="openai", fallback="nope"), reg, tmp_path)
    assert info.value.key == "fallback"


def test_selection_is_lazy_and_failure_sticky(tmp_path: Path) -> None:
    bad = Spec("openai", ProviderError("bad key"))
    rt, _ = runtime(registry_of(bad), tmp_path, provider="openai")
    assert not rt.initialized and bad.contexts == []
    with pytest.raises(ProviderError) as first:
        rt.embed_query("x")
    with pytest.raises(ProviderError) as second:
        rt.selection()
    assert first.value is second.value is rt.error
    assert rt.initialized
    assert len(bad.contexts) == 1  # not retried on every call


def test_selection_happens_once(tmp_path: Path) -> None:
    good = Spec("p", FakeProvider("p"))
    rt, _ = runtime(registry_of(good), tmp_path, provider="p")
    rt.embed_query("a")
    rt.embed_documents(["b", "c"])
    assert rt.selection() is rt.selection()
    assert len(good.contexts) == 1


# ---------------------------------------------------------------- vectors


def test_vectors_are_unit_float32(tmp_path: Path) -> None:
    provider = FakeProvider("p")
    rt, _ = runtime(registry_of(Spec("p", provider)), tmp_path, provider="p")
    q = rt.embed_query("hello")
    assert q.shape == (4,) and q.dtype == np.float32
    assert np.linalg.norm(q) == pytest.approx(1.0, abs=1e-6)
    raw = np.asarray(provider._vec("hello"), dtype=np.float64)
    assert np.allclose(q, raw / np.linalg.norm(raw), atol=1e-6)
    docs = rt.embed_documents(["a", "bb", "ccc"])
    assert docs.shape == (3, 4)
    assert_unit_rows(docs)
    # order is preserved: row i belongs to text i
    expected = np.asarray([provider._vec(t) for t in ["a", "bb", "ccc"]], dtype=np.float64)
    expected /= np.linalg.norm(expected, axis=1, keepdims=True)
    assert np.allclose(docs, expected, atol=1e-6)


def test_non_finite_values_become_zero(tmp_path: Path) -> None:
    class NanProvider(FakeProvider):
        def embed_query(self, text: str) -> list[float]:
            return [float("nan"), 3.0, 4.0, float("inf")]

    rt, _ = runtime(registry_of(Spec("p", NanProvider("p"))), tmp_path, provider="p")
    assert np.allclose(rt.embed_query("x"), [0.0, 0.6, 0.8, 0.0])


def test_empty_document_list(tmp_path: Path) -> None:
    provider = FakeProvider("p", dims=6)
    provider.out_dims = 6
    rt, _ = runtime(registry_of(Spec("p", provider)), tmp_path, provider="p")
    assert rt.embed_documents([]).shape == (0, 6)
    assert provider.batches == []


def test_wrong_dims_is_an_error(tmp_path: Path) -> None:
    provider = FakeProvider("p", dims=4)
    provider.out_dims = 3
    rt, _ = runtime(registry_of(Spec("p", provider)), tmp_path, provider="p")
    with pytest.raises(ProviderError, match=r"3-dimensional vectors, expected 4"):
        rt.embed_documents(["x"])
    with pytest.raises(ProviderError, match="expected 4"):
        rt.embed_query("x")


def test_dims_learned_from_first_response(tmp_path: Path) -> None:
    provider = FakeProvider("p", dims=None)
    provider.out_dims = 5
    rt, _ = runtime(registry_of(Spec("p", provider)), tmp_path, provider="p")
    assert rt.embed_query("x").shape == (5,)
    assert rt.dims == 5
    provider.out_dims = 7  # the model changed under us: never mix vector spaces
    with pytest.raises(ProviderError, match="expected 5"):
        rt.embed_documents(["y"])


def test_wrong_count_is_an_error(tmp_path: Path) -> None:
    provider = FakeProvider("p")
    provider.drop_one = True
    rt, _ = runtime(registry_of(Spec("p", provider)), tmp_path, provider="p")
    with pytest.raises(ProviderError, match="returned 2 vectors for 3 inputs"):
        rt.embed_documents(["a", "b", "c"])


def test_empty_vectors_are_an_error(tmp_path: Path) -> None:
    class Empty(FakeProvider):
        def embed_batch(self, texts: Sequence[str]) -> list[list[float]]:
            return [[] for _ in texts]

    rt, _ = runtime(registry_of(Spec("p", Empty("p", dims=None))), tmp_path, provider="p")
    with pytest.raises(ProviderError, match="empty vectors"):
        rt.embed_documents(["a"])


# ---------------------------------------------------------------- retries


def test_transient_failures_are_retried(tmp_path: Path) -> None:
    provider = FakeProvider("p")
    provider.errors = [HttpError("slow down", 429), HttpError("oops", 503)]
    rt, sleeps = runtime(registry_of(Spec("p", provider)), tmp_path, provider="p")
    docs = rt.embed_documents(["a", "b"])
    assert docs.shape == (2, 4)
    assert len(provider.batches) == 3
    assert sleeps == [0.5, 1.0]


def test_query_retries_then_gives_up_after_three(tmp_path: Path) -> None:
    provider = FakeProvider("p")
    provider.errors = [TimeoutError("timed out")] * 10
    rt, sleeps = runtime(registry_of(Spec("p", provider)), tmp_path, provider="p")
    with pytest.raises(ProviderError) as info:
        rt.embed_query("q")
    assert len(provider.queries) == 4 and sleeps == [0.5, 1.0, 2.0]
    assert info.value.provider == "p"


def test_permanent_failure_not_retried(tmp_path: Path) -> None:
    provider = FakeProvider("p")
    provider.errors = [HttpError("invalid api key", 401)]
    rt, sleeps = runtime(registry_of(Spec("p", provider)), tmp_path, provider="p")
    with pytest.raises(ProviderError, match="invalid api key") as info:
        rt.embed_documents(["a"])
    assert len(provider.batches) == 1 and sleeps == []
    assert info.value.status_code == 401


# ---------------------------------------------------------------- batching


def test_remote_requests_batched_by_bytes(tmp_path: Path) -> None:
    provider = FakeProvider("p")
    rt, _ = runtime(registry_of(Spec("p", provider, transport="remote")), tmp_path, provider="p")
    size = REMOTE_BATCH_BYTES // 2 - 100
    texts = [chr(ord("a") + i) * size for i in range(5)]
    docs = rt.embed_documents(texts)
    assert docs.shape == (5, 4)
    assert [len(b) for b in provider.batches] == [2, 2, 1]
    assert [t for b in provider.batches for t in b] == texts
    for batch in provider.batches:
        assert sum(len(t.encode()) for t in batch) <= REMOTE_BATCH_BYTES


def test_remote_batches_count_utf8_bytes(tmp_path: Path) -> None:
    provider = FakeProvider("p")
    rt, _ = runtime(registry_of(Spec("p", provider, transport="remote")), tmp_path, provider="p")
    # 1500 CJK characters = 4500 bytes each: two do not fit in one request
    rt.embed_documents(["記" * 1500, "憶" * 1500])
    assert [len(b) for b in provider.batches] == [1, 1]


def test_local_requests_batched_by_count(tmp_path: Path) -> None:
    provider = FakeProvider("p")
    rt, _ = runtime(registry_of(Spec("p", provider, transport="local")), tmp_path, provider="p")
    texts = [f"text {i}" for i in range(LOCAL_BATCH_TEXTS * 2 + 3)]
    docs = rt.embed_documents(texts)
    assert docs.shape == (len(texts), 4)
    assert [len(b) for b in provider.batches] == [LOCAL_BATCH_TEXTS, LOCAL_BATCH_TEXTS, 3]


def test_batch_api_used_only_when_enabled(tmp_path: Path) -> None:
    provider = BatchProvider()
    reg = registry_of(Spec("batchy", provider))
    rt, _ = runtime(reg, tmp_path, provider="batchy")
    rt.embed_documents(["a", "b"])
    assert provider.batch_calls == 0 and len(provider.batches) == 1

    provider2 = BatchProvider()
    rt2, _ = runtime(
        registry_of(Spec("batchy", provider2)),
        tmp_path,
        provider="batchy",
        remote={"batch": {"enabled": True}},
    )
    docs = rt2.embed_documents(["a", "b", "c"])
    assert provider2.batch_calls == 1 and provider2.batches == []
    assert docs.shape == (3, 4)
    assert_unit_rows(docs)


def test_two_batch_failures_disable_batching(tmp_path: Path) -> None:
    provider = BatchProvider()
    provider.batch_errors = [RuntimeError("batch job failed"), RuntimeError("again")]
    rt, _ = runtime(
        registry_of(Spec("batchy", provider)),
        tmp_path,
        provider="batchy",
        remote={"batch": {"enabled": True}},
    )
    first = rt.embed_documents(["a", "b"])  # falls back to normal requests
    assert first.shape == (2, 4) and len(provider.batches) == 1
    assert rt.batch.failures == 1 and not rt.batch.disabled
    rt.embed_documents(["c"])
    assert rt.batch.disabled
    assert rt.batch.last_error is not None and "again" in rt.batch.last_error
    rt.embed_documents(["d"])
    assert provider.batch_calls == 2  # not tried again once disabled
    assert len(provider.batches) == 3


def test_batch_success_resets_failures(tmp_path: Path) -> None:
    provider = BatchProvider()
    rt, _ = runtime(
        registry_of(Spec("batchy", provider)),
        tmp_path,
        provider="batchy",
        remote={"batch": {"enabled": True}},
    )
    provider.batch_errors = [RuntimeError("one")]
    rt.embed_documents(["a"])
    rt.embed_documents(["b"])  # succeeds through the batch API
    assert rt.batch.failures == 0
    provider.batch_errors = [RuntimeError("two")]
    rt.embed_documents(["c"])
    assert not rt.batch.disabled
    assert provider.batch_calls == 3


def test_batch_error_can_disable_immediately(tmp_path: Path) -> None:
    provider = BatchProvider()
    err = RuntimeError("batch API not enabled for this account")
    err.disable_batch = True  # type: ignore[attr-defined]
    provider.batch_errors = [err]
    rt, _ = runtime(
        registry_of(Spec("batchy", provider)),
        tmp_path,
        provider="batchy",
        remote={"batch": {"enabled": True}},
    )
    rt.embed_documents(["a"])
    assert rt.batch.disabled


def test_batch_wrong_count_counts_as_failure(tmp_path: Path) -> None:
    class ShortBatch(BatchProvider):
        def batch_embed(self, texts: list[str]) -> list[list[float]]:
            self.batch_calls += 1
            return [self._vec(t) for t in texts[:-1]]

    provider = ShortBatch()
    rt, _ = runtime(
        registry_of(Spec("batchy", provider)),
        tmp_path,
        provider="batchy",
        remote={"batch": {"enabled": True}},
    )
    docs = rt.embed_documents(["a", "b"])
    assert docs.shape == (2, 4)  # served by normal requests
    assert rt.batch.failures == 1


# ---------------------------------------------------------------- activate_fallback


def test_activate_fallback_steps_down_the_ladder_once_each(tmp_path: Path) -> None:
    primary = FakeProvider("openai", dims=4)
    secondary = FakeProvider("local", dims=8)
    secondary.out_dims = 8
    local = Spec("local", secondary, transport="local")
    reg = registry_of(Spec("openai", primary), local)
    rt, _ = runtime(reg, tmp_path, provider="openai", fallback="local")
    assert rt.embed_query("x").shape == (4,)
    key_before = rt.provider_key()

    assert rt.activate_fallback("openai quota exhausted") is True
    assert rt.provider is secondary
    sel = rt.selection()
    assert sel.fallback is not None
    assert (sel.fallback.from_, sel.fallback.to) == ("openai", "local")
    assert sel.fallback.reason == "openai quota exhausted"
    assert rt.embed_query("x").shape == (8,)  # dims re-learned for the new vector space
    assert rt.provider_key() != key_before

    assert rt.activate_fallback("local failed too") is True  # the last rung: keyword-only
    assert rt.provider is None and len(local.contexts) == 1
    sel = rt.selection()
    assert sel.fallback is not None and (sel.fallback.from_, sel.fallback.to) == ("openai", "none")
    assert "local failed too" in sel.fallback.reason
    assert sel.unavailable_reason == sel.fallback.reason
    assert rt.activate_fallback("again") is False


def test_activate_fallback_noops(tmp_path: Path) -> None:
    reg = registry_of(Spec("a", FakeProvider("a")), Spec("b", FakeProvider("b")))
    no_fb, _ = runtime(reg, tmp_path, provider="a")
    assert no_fb.activate_fallback("x") is False
    keyword, _ = runtime(reg, tmp_path, provider="none", fallback="b")
    assert keyword.activate_fallback("x") is False
    same, _ = runtime(reg, tmp_path, provider="a", fallback="a")
    assert same.activate_fallback("x") is False
    assert same.provider is not None and same.provider.id == "a"


def test_activate_fallback_after_selection_fallback_goes_keyword_only(tmp_path: Path) -> None:
    reg = registry_of(Spec("a", ProviderError("down")), Spec("b", FakeProvider("b")))
    rt, _ = runtime(reg, tmp_path, provider="a", fallback="b")
    assert rt.provider is not None and rt.provider.id == "b"
    assert rt.activate_fallback("b: 503") is True
    assert rt.provider is None and rt.activate_fallback("x") is False


def test_a_fallback_that_cannot_start_at_runtime_goes_keyword_only(tmp_path: Path) -> None:
    reg = registry_of(Spec("a", FakeProvider("a")), Spec("b", ProviderError("no key for b")))
    rt, _ = runtime(reg, tmp_path, provider="a", fallback="b")
    assert rt.provider is not None and rt.provider.id == "a"
    assert rt.activate_fallback("a: 503") is True
    sel = rt.selection()
    assert sel.provider is None and sel.fallback is not None and sel.fallback.to == "none"
    assert "a: 503" in sel.fallback.reason and "no key for b" in sel.fallback.reason


def test_keyword_only_gives_way_to_a_new_selection_after_the_retry_time(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    reg = registry_of(Spec("a", ProviderError("down")), Spec("b", ProviderError("down too")))
    rt, _ = runtime(reg, tmp_path, provider="a", fallback="b", fallback_retry_minutes=1)
    assert rt.provider is None and rt.selection().fallback is not None
    reg_ok = registry_of(Spec("a", FakeProvider("a")), Spec("b", FakeProvider("b")))
    rt.registry = reg_ok
    assert rt.provider is None, "kept until the retry time"
    now = time.time()
    monkeypatch.setattr(embedding_runtime.time, "time", lambda: now + 61)
    assert rt.provider is not None and rt.provider.id == "a"
    assert rt.selection().fallback is None
