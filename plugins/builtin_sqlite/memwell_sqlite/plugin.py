"""Registers the ``builtin`` backend with memwell."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from memwell.plugin import BackendContext, SearchBackend, hookimpl

from .config import BuiltinConfig
from .driver import capabilities

if TYPE_CHECKING:
    from .manager import SqliteMemoryManager

MEMWELL_PLUGIN_API = ">=1.0,<2"
"""The memwell plugin API versions this plugin supports."""


def _create(ctx: BackendContext) -> SqliteMemoryManager:
    from .manager import SqliteMemoryManager  # imported when the backend is chosen

    config = ctx.plugin_config if isinstance(ctx.plugin_config, BuiltinConfig) else None
    return SqliteMemoryManager(ctx, config)


@hookimpl
def memwell_search_backends() -> Iterator[SearchBackend]:
    yield SearchBackend(
        name="builtin",
        create=_create,
        description="SQLite + FTS5 + sqlite-vec (numpy fallback); the default",
        config_model=BuiltinConfig,
        capabilities=frozenset(
            {"keyword", "vector", "hybrid", "mmr", "decay", "sessions", "boolean"}
        ),
        diagnostics=capabilities,
    )
