"""Build managers for conformance tests exactly as ``open_memory`` would, in isolation."""

from __future__ import annotations

import shutil
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from memwell.contract.config import MemwellSettings, load_settings, plugin_config
from memwell.contract.manager import MemorySearchManager
from memwell.registry.plugins import PluginRegistry
from memwell.runtime.factory import backend_context, open_memory
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


def synced_copy(
    source: Path, root: Path, plugins: Mapping[str, object], settings: Mapping[str, Any]
) -> MemorySearchManager:
    """A manager over a copy of the workspace ``source`` made at ``root / "ws"`` (without its
    ``.memwell`` index), opened by ``open_memory`` with only ``plugins`` (see
    :func:`isolated_registry`) and ``settings``, and synced once."""
    workspace = root / "ws"
    shutil.copytree(source, workspace, ignore=shutil.ignore_patterns(".memwell"))
    memory = open_memory(
        workspace,
        settings=MemwellSettings.model_validate(dict(settings)),
        registry=isolated_registry(plugins),
    )
    memory.sync()
    return memory
