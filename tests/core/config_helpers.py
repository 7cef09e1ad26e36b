"""A plugin registry with one backend, ``tiny``, whose config model a test chooses."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from memwell.contract.descriptors import SearchBackend
from memwell.contract.hookspecs import hookimpl
from memwell.registry.plugins import PluginRegistry


def tiny_backend_registry(config_model: type[Any]) -> PluginRegistry:
    """A registry whose only plugin, ``tinyp``, offers backend ``tiny`` with ``config_model``."""

    def create(ctx: Any) -> Any:  # pragma: no cover - never built in these tests
        raise AssertionError("not used")

    @hookimpl
    def memwell_search_backends() -> list[SearchBackend]:
        return [SearchBackend(name="tiny", create=create, config_model=config_model)]

    registry = PluginRegistry(load_entry_points=False)
    registry.register(SimpleNamespace(memwell_search_backends=memwell_search_backends), "tinyp")
    return registry
