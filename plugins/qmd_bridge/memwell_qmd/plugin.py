"""memwell plugin entry point: registers the ``qmd`` search backend."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from memwell.plugin import BackendContext, SearchBackend, hookimpl

from .config import BACKEND_NAME, QmdConfig

if TYPE_CHECKING:
    from .manager import QmdMemoryManager

MEMWELL_PLUGIN_API = ">=1.0,<2"
"""The memwell plugin API versions this plugin supports."""


def create_manager(ctx: BackendContext) -> QmdMemoryManager:
    """Build a :class:`QmdMemoryManager` for ``ctx.workspace`` from ``[backends.qmd]``."""
    from .manager import QmdMemoryManager  # imported when the backend is chosen

    config = ctx.plugin_config if isinstance(ctx.plugin_config, QmdConfig) else QmdConfig()
    return QmdMemoryManager(ctx, config)


@hookimpl
def memwell_search_backends() -> Iterator[SearchBackend]:
    yield SearchBackend(
        name=BACKEND_NAME,
        create=create_manager,
        description="qmd CLI (BM25, vectors, rerank) as a subprocess, isolated per workspace",
        config_model=QmdConfig,
        capabilities=frozenset({"keyword", "vector", "hybrid"}),
    )
