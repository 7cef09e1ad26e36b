from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import memwell_sqlite.plugin
import pytest
from memwell.contract.config import MemwellSettings
from memwell.contract.descriptors import TextGeneratorSpec
from memwell.contract.errors import ProviderError
from memwell.contract.hookspecs import hookimpl
from memwell.contract.manager import MemorySearchManager
from memwell.registry.plugins import PluginRegistry
from memwell.runtime.factory import close_all, open_memory
from memwell.testing import HashEmbeddingProvider, hash_provider_plugin
from memwell.testing.conformance import write_workspace

OpenFn = Callable[..., MemorySearchManager]


class Scripted:
    """A text generator as a third-party plugin gives one: a fixed answer, or ``None`` to fail;
    it records the prompts and system instructions it was given."""

    id = "scripted"
    model = "scripted-1"

    def __init__(self, answer: str | None) -> None:
        self.answer = answer
        self.prompts: list[str] = []
        self.systems: list[str | None] = []

    def generate(self, prompt: str, *, max_tokens: int, system: str | None = None) -> str:
        self.prompts.append(prompt)
        self.systems.append(system)
        if self.answer is None:
            raise ProviderError("scripted is down", provider=self.id)
        return self.answer


def textgen_plugin(generator: Scripted, registry: PluginRegistry | None = None) -> PluginRegistry:
    """``registry`` (default: a new one) with a plugin offering ``generator`` as ``scripted``."""

    class Plugin:
        @hookimpl
        def memwell_text_generators(self) -> list[TextGeneratorSpec]:
            spec = TextGeneratorSpec(
                id="scripted",
                create=lambda ctx: generator,
                default_model="scripted-1",
                transport="remote",
            )
            return [spec]

    reg = registry or PluginRegistry(load_entry_points=False)
    reg.register(Plugin(), "scripted-plugin")
    return reg


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
