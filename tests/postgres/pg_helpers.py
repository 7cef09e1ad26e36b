"""Helpers shared by the postgres tests: building a manager with test settings."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from memwell.contract.config import load_settings
from memwell.registry.plugins import PluginRegistry
from memwell.runtime.factory import backend_context
from memwell_postgres.config import PostgresConfig
from memwell_postgres.manager import PostgresMemoryManager

Build = Callable[..., PostgresMemoryManager]


def make_manager(
    workspace: Path,
    registry: PluginRegistry,
    dsn: str,
    *,
    provider: str = "hash",
    pg: dict[str, Any] | None = None,
    **overrides: Any,
) -> PostgresMemoryManager:
    """A manager on ``workspace`` with test settings (no watcher, no sync on search)."""
    section = {"dsn": dsn, **(pg or {})}
    settings = load_settings(
        workspace,
        overrides={
            "backend": "postgres",
            "provider": provider,
            "backends": {"postgres": section},
            "sync": {"watch": False, "on_search": False},
            **overrides,
        },
        environ={},
        user_config=workspace.parent / "no-user-config.toml",
        registry=registry,
    )
    config = PostgresConfig.model_validate(section)
    return PostgresMemoryManager(backend_context(workspace, settings, registry, config), config)
