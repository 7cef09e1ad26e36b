"""Child-process bodies for the multi-process tests (run with the ``spawn`` start method)."""

from __future__ import annotations

from pathlib import Path

import memwell_postgres.plugin as pg_plugin
from memwell.registry.plugins import PluginRegistry
from memwell.testing import HashEmbeddingProvider, hash_provider_plugin
from pg_helpers import make_manager


def _registry() -> PluginRegistry:
    registry = PluginRegistry(load_entry_points=False)
    registry.register(hash_provider_plugin(HashEmbeddingProvider()), "hash")
    registry.register(pg_plugin, "postgres")
    return registry


def writer(dsn: str, workspace: str, namespace: str, host: str, rounds: int) -> None:
    """Each round: add three files, rewrite the shared file, edit an old one, then sync."""
    ws = Path(workspace)
    manager = make_manager(ws, _registry(), dsn, pg={"namespace": namespace, "host_id": host})
    try:
        for r in range(rounds):
            for i in range(3):
                (ws / "memory" / f"{host}-{r}-{i}.md").write_text(
                    f"# {host} round {r} file {i}\n\nWritten by {host} in round {r}.\n",
                    encoding="utf-8",
                )
            (ws / "memory" / "shared.md").write_text(
                f"# Shared\n\nLast edited by {host} in round {r}.\n", encoding="utf-8"
            )
            if r:
                (ws / "memory" / f"{host}-0-0.md").write_text(
                    f"# {host} first file\n\nRevised in round {r}.\n", encoding="utf-8"
                )
            manager.sync(reason="writer")
    finally:
        manager.close()


def rebuilder(dsn: str, workspace: str, namespace: str, times: int) -> None:
    """Rebuild the namespace ``times`` times (each a new generation and a switch)."""
    manager = make_manager(
        Path(workspace), _registry(), dsn, provider="none", pg={"namespace": namespace}
    )
    try:
        for _ in range(times):
            manager.sync(reason="rebuild", force=True)
    finally:
        manager.close()
