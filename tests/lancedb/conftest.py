"""Fixtures for the lancedb backend: a registry with the hash provider, and manager builders."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import memwell_lancedb.plugin as lance_plugin
import pytest
from lancedb_helpers import Build
from memwell.contract.config import load_settings
from memwell.registry.plugins import PluginRegistry
from memwell.runtime.factory import backend_context
from memwell.testing import HashEmbeddingProvider, hash_provider_plugin
from memwell_lancedb.config import LanceConfig
from memwell_lancedb.manager import LanceMemoryManager


@pytest.fixture
def provider() -> HashEmbeddingProvider:
    """One shared provider, so tests can count what was embedded."""
    return HashEmbeddingProvider()


@pytest.fixture
def registry(provider: HashEmbeddingProvider) -> PluginRegistry:
    registry = PluginRegistry(load_entry_points=False)
    registry.register(hash_provider_plugin(provider), "hash")
    registry.register(lance_plugin, "lancedb")
    return registry


@pytest.fixture
def model_registry() -> PluginRegistry:
    """A registry whose hash provider honours the model name (``hash-32`` has 32 dims)."""
    registry = PluginRegistry(load_entry_points=False)
    registry.register(hash_provider_plugin(), "hash")
    registry.register(lance_plugin, "lancedb")
    return registry


@pytest.fixture
def build(registry: PluginRegistry, tmp_path: Path) -> Iterator[Build]:
    """``build(workspace, provider="hash", lance={...}, **settings)`` -> an open manager.

    ``registry=`` overrides the registry (default: the shared-provider one).
    """
    managers: list[LanceMemoryManager] = []
    default_registry = registry

    def make(
        workspace: Path,
        *,
        provider: str = "hash",
        lance: dict[str, Any] | None = None,
        registry: PluginRegistry = default_registry,
        **overrides: Any,
    ) -> LanceMemoryManager:
        section = lance or {}
        settings = load_settings(
            workspace,
            overrides={
                "backend": "lancedb",
                "provider": provider,
                "backends": {"lancedb": section},
                **overrides,
            },
            environ={},
            user_config=tmp_path / "no-user-config.toml",
            registry=registry,
        )
        config = LanceConfig.model_validate(section)
        manager = LanceMemoryManager(backend_context(workspace, settings, registry, config), config)
        managers.append(manager)
        return manager

    yield make
    for manager in managers:
        manager.close()


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    (root / "memory").mkdir(parents=True)
    return root
