from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import memwell_sqlite.plugin
import pytest
from memwell.contract.config import MemwellSettings
from memwell.contract.manager import MemorySearchManager
from memwell.registry.plugins import PluginRegistry
from memwell.runtime.factory import close_all, open_memory
from memwell.testing import HashEmbeddingProvider, hash_provider_plugin
from memwell.testing.conformance import write_workspace

OpenFn = Callable[..., MemorySearchManager]


@pytest.fixture
def provider() -> HashEmbeddingProvider:
    return HashEmbeddingProvider()


@pytest.fixture
def registry(provider: HashEmbeddingProvider) -> PluginRegistry:
    reg = PluginRegistry(load_entry_points=False)
    reg.register(memwell_sqlite.plugin, "builtin")
    reg.register(hash_provider_plugin(provider), "hash")
    return reg


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    return write_workspace(tmp_path / "ws")


@pytest.fixture
def open_ws(registry: PluginRegistry) -> Iterator[OpenFn]:
    """Open a workspace with test-friendly settings (no watcher, no background sync)."""

    def make(workspace: Path, **overrides: Any) -> MemorySearchManager:
        data: dict[str, Any] = {
            "provider": "hash",
            "sync": {"watch": False, "on_search": False},
        }
        for key, value in overrides.items():
            if isinstance(value, dict) and isinstance(data.get(key), dict):
                data[key] = {**data[key], **value}
            else:
                data[key] = value
        settings = MemwellSettings.model_validate(data)
        return open_memory(workspace, settings=settings, registry=registry)

    yield make
    close_all()
