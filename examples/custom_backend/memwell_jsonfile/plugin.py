"""Registers the ``jsonfile`` backend with memwell (entry point ``memwell: jsonfile``)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from memwell.descriptors import BackendContext, SearchBackend
from memwell.hookspecs import hookimpl

from .config import JsonFileConfig

if TYPE_CHECKING:
    from .manager import JsonFileManager


def create_manager(ctx: BackendContext) -> JsonFileManager:
    """Build the manager; imported lazily so listing plugins stays cheap."""
    from .manager import JsonFileManager

    config = ctx.plugin_config if isinstance(ctx.plugin_config, JsonFileConfig) else None
    return JsonFileManager(ctx, config)


@hookimpl
def memwell_search_backends() -> Iterator[SearchBackend]:
    yield SearchBackend(
        name="jsonfile",
        create=create_manager,
        description="Example backend: the whole index in one JSON file",
        config_model=JsonFileConfig,
        capabilities=frozenset({"keyword", "vector", "hybrid", "mmr", "decay"}),
    )
