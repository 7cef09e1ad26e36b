"""Build managers for conformance tests exactly as ``open_memory`` would, in isolation."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from memwell.contract.config import load_settings, plugin_config
from memwell.contract.manager import MemorySearchManager
from memwell.registry.plugins import PluginRegistry
from memwell.runtime.factory import backend_context
from memwell.testing.fakes import hash_provider_plugin


def isolated_registry(plugins: Mapping[str, object]) -> PluginRegistry:
    """A registry holding only ``plugins`` (name -> plugin module) and the offline ``hash``
    provider; installed entry points are not loaded."""
    registry = PluginRegistry(load_entry_points=False)
    for name, plugin in plugins.items():
        registry.register(plugin, name)
    if "hash" not in registry.providers:
        registry.register(hash_provider_plugin(), "hash")
    return registry


def backend_factory(
    plugins: Mapping[str, object], backend: str, *, home: Path, **overrides: Any
) -> Callable[[Path], MemorySearchManager]:
    """``workspace -> manager`` for ``backend``, for a ``memory_factory`` fixture.

    Settings come from the defaults, the workspace's ``memwell.toml`` and ``overrides`` only:
    the environment and the user config (looked up under ``home``) are ignored, so a
    developer's own settings never change a test. ``provider="hash"`` gives hybrid search
    with a deterministic offline provider, ``provider="none"`` keyword-only search.
    """

    def make(workspace: Path) -> MemorySearchManager:
        registry = isolated_registry(plugins)
        settings = load_settings(
            workspace,
            overrides={"backend": backend, **overrides},
            environ={},
            user_config=home / "no-user-config.toml",
            registry=registry,
        )
        spec = registry.backends[backend]
        section = plugin_config(spec.config_model, settings.backends.get(backend), backend)
        return spec.create(backend_context(workspace, settings, registry, section))

    return make
