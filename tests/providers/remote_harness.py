"""Shared helpers for the remote provider tests: registries, settings, runtimes, fixtures."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import memwell_gemini.plugin
import memwell_mistral.plugin
import memwell_ollama.plugin
import memwell_openai.plugin
import memwell_voyage.plugin
import numpy as np
import pytest
from fake_embedding_server import FakeEmbeddingServer, fake_vector
from memwell.contract.config import MemwellSettings, deep_merge, plugin_config
from memwell.contract.descriptors import ProviderContext
from memwell.providers.remote import RemoteEmbeddingProvider
from memwell.providers.retry import RetryPolicy
from memwell.providers.runtime import EmbeddingRuntime
from memwell.registry.plugins import PluginRegistry

PROVIDERS = ("openai", "gemini", "mistral", "voyage")
BATCH_PROVIDERS = ("openai", "gemini", "voyage")
PLUGINS = {
    "openai": memwell_openai.plugin,
    "gemini": memwell_gemini.plugin,
    "mistral": memwell_mistral.plugin,
    "voyage": memwell_voyage.plugin,
    "ollama": memwell_ollama.plugin,
}
DEFAULT_MODELS = {
    "openai": "text-embedding-3-small",
    "gemini": "gemini-embedding-001",
    "mistral": "mistral-embed",
    "voyage": "voyage-3.5",
}
KEY_ENV = {
    "openai": ("OPENAI_API_KEY",),
    "gemini": ("GEMINI_API_KEY", "GOOGLE_API_KEY"),
    "mistral": ("MISTRAL_API_KEY",),
    "voyage": ("VOYAGE_API_KEY",),
}
#: The version-bearing API root each provider is configured with (the reference's form).
API_ROOT = {"openai": "/v1", "gemini": "/v1beta", "mistral": "/v1", "voyage": "/v1", "ollama": ""}
#: Where each provider's embedding requests land on the fake server.
EMBED_ROUTE = {
    "openai": "/v1/embeddings",
    "gemini": ":batchEmbedContents",
    "mistral": "/v1/embeddings",
    "voyage": "/v1/embeddings",
}
#: Variables the SDKs would read by themselves; tests start without any of them.
SDK_ENV = (
    *(name for names in KEY_ENV.values() for name in names),
    "VOYAGE_API_KEY_PATH",
    "OPENAI_BASE_URL",
    "GOOGLE_GEMINI_BASE_URL",
    "OLLAMA_HOST",
)


def serve() -> Iterator[FakeEmbeddingServer]:
    """Fixture body: a running fake server for one test."""
    with FakeEmbeddingServer() as server:
        yield server


def clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """Fixture body: no API keys or SDK base URLs from the developer's environment."""
    for name in SDK_ENV:
        monkeypatch.delenv(name, raising=False)


def make_registry(*ids: str) -> PluginRegistry:
    """A registry holding only the given remote provider plugins (never ``local``)."""
    registry = PluginRegistry(load_entry_points=False)
    for provider_id in ids or PROVIDERS:
        registry.register(PLUGINS[provider_id], provider_id)
    return registry


def section(server: FakeEmbeddingServer, provider_id: str, **extra: Any) -> dict[str, Any]:
    """A ``providers.<id>`` section pointing at the fake server, with a key."""
    return {"base_url": server.url + API_ROOT[provider_id], "api_key": "test-key", **extra}


def make_settings(**values: Any) -> MemwellSettings:
    """Settings with fast timeouts; ``values`` are merged over them."""
    base: dict[str, Any] = {"remote": {"timeout_seconds": 5}}
    return MemwellSettings.model_validate(deep_merge(base, values))


def make_runtime(
    settings: MemwellSettings, tmp_path: Path, *ids: str
) -> tuple[EmbeddingRuntime, list[float]]:
    """A runtime over ``ids`` whose retry sleeps are recorded instead of slept."""
    delays: list[float] = []
    runtime = EmbeddingRuntime(
        settings, make_registry(*ids), tmp_path, retry=RetryPolicy(sleep=delays.append)
    )
    return runtime, delays


def runtime_for(
    server: FakeEmbeddingServer, provider_id: str, tmp_path: Path, **values: Any
) -> tuple[EmbeddingRuntime, list[float]]:
    """A runtime with ``provider_id`` selected explicitly and pointed at ``server``."""
    extra = values.pop("section", {})
    settings = make_settings(
        provider=provider_id,
        providers={provider_id: section(server, provider_id, **extra)},
        **values,
    )
    return make_runtime(settings, tmp_path, provider_id)


def create_provider(
    provider_id: str, tmp_path: Path, *, model: str = "", **values: Any
) -> RemoteEmbeddingProvider:
    """Build a provider directly through its spec (no runtime)."""
    settings = make_settings(**values)
    spec = make_registry(provider_id).providers[provider_id]
    ctx = ProviderContext(
        workspace=tmp_path,
        settings=settings,
        model=model or spec.default_model,
        plugin_config=plugin_config(
            spec.config_model, settings.providers.get(provider_id), f"providers.{provider_id}"
        ),
    )
    provider = spec.create(ctx)
    assert isinstance(provider, RemoteEmbeddingProvider)
    return provider


def unit(vector: list[float]) -> np.ndarray[Any, np.dtype[np.float32]]:
    arr = np.asarray(vector, dtype=np.float32)
    normed: np.ndarray[Any, np.dtype[np.float32]] = arr / np.linalg.norm(arr)
    return normed


def expected_matrix(texts: list[str], dims: int = 8) -> np.ndarray[Any, np.dtype[np.float32]]:
    return np.vstack([unit(fake_vector(text, dims)) for text in texts])
