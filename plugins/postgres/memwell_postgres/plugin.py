"""Registers the ``postgres`` backend with memwell (entry point ``memwell: postgres``)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from memwell.plugin import BackendContext, SearchBackend, hookimpl

from .config import PostgresConfig

if TYPE_CHECKING:
    from .manager import PostgresMemoryManager

MEMWELL_PLUGIN_API = ">=1.0,<2"
"""The memwell plugin API versions this plugin supports."""


def create_manager(ctx: BackendContext) -> PostgresMemoryManager:
    """Build the manager; the driver is imported only when the backend is chosen."""
    from .manager import PostgresMemoryManager

    config = ctx.plugin_config if isinstance(ctx.plugin_config, PostgresConfig) else None
    return PostgresMemoryManager(ctx, config)


def _diagnostics() -> dict[str, Any]:
    from .diagnostics import diagnostics

    return diagnostics()


@hookimpl
def memwell_search_backends() -> Iterator[SearchBackend]:
    yield SearchBackend(
        name="postgres",
        create=create_manager,
        description="PostgreSQL + pgvector: one memory shared by many agents and hosts",
        config_model=PostgresConfig,
        capabilities=frozenset({"keyword", "vector", "hybrid", "mmr", "decay"}),
        diagnostics=_diagnostics,
    )
