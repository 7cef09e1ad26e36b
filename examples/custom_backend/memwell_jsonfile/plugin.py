"""Registers the ``jsonfile`` backend with memwell (entry point ``memwell: jsonfile``)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from memwell.plugin import BackendContext, SearchBackend, hookimpl, plugin_settings

from .config import JsonFileConfig

if TYPE_CHECKING:
    from .manager import JsonFileManager

MEMWELL_PLUGIN_API = ">=1.0,<2"
"""The memwell plugin API versions this plugin supports."""


def create_manager(ctx: BackendContext) -> JsonFileManager:
    """Build the manager; imported lazily so listing plugins stays cheap."""
    from .manager import JsonFileManager

    return JsonFileManager(ctx, plugin_settings(ctx, JsonFileConfig))


@hookimpl
def memwell_search_backends() -> Iterator[SearchBackend]:
    yield SearchBackend(
        name="jsonfile",
        create=create_manager,
        description="Example backend: the whole index in one JSON file",
        config_model=JsonFileConfig,
        capabilities=frozenset({"keyword", "vector", "hybrid", "mmr", "decay"}),
    )
