"""What ``memwell doctor`` reports for the postgres backend: connection, version, pgvector."""

from __future__ import annotations

from typing import Any

from memwell.plugin import MemwellError

from .config import PostgresConfig
from .db import connect_once, describe_dsn

MIN_SERVER_VERSION = 130000
ITERATIVE_SCAN_VERSION = (0, 8)


def _version_tuple(text: str) -> tuple[int, ...]:
    return tuple(int(p) for p in text.split(".") if p.isdigit())


def check_server(config: PostgresConfig) -> dict[str, Any]:
    """Connect with ``config`` and say what is there and what is missing."""
    if not config.dsn:
        return {"dsn": 'not configured (set [backends.postgres] dsn = "postgresql://...")'}
    facts: dict[str, Any] = {"server": describe_dsn(config.dsn)}
    try:
        conn = connect_once(config.dsn, config.connect_timeout)
    except MemwellError as exc:
        facts["connection"] = f"failed: {exc}"
        return facts
    with conn:
        facts["connection"] = "ok"
        row = conn.execute(
            "SELECT current_setting('server_version_num')::int, version()"
        ).fetchone()
        number, full = (int(row[0]), str(row[1])) if row else (0, "unknown")
        verdict = "ok" if number >= MIN_SERVER_VERSION else "too old: PostgreSQL 13+ needed"
        facts["server_version"] = f"{full.split(' on ')[0]} ({verdict})"
        installed = conn.execute(
            "SELECT extversion FROM pg_extension WHERE extname = 'vector'"
        ).fetchone()
        available = conn.execute(
            "SELECT default_version FROM pg_available_extensions WHERE name = 'vector'"
        ).fetchone()
        facts["vector_extension"] = _vector_fact(
            None if installed is None else str(installed[0]),
            None if available is None else str(available[0]),
        )
        schema = conn.execute(
            "SELECT 1 FROM pg_namespace WHERE nspname = %s", (config.schema_name,)
        ).fetchone()
        facts["schema"] = (
            f"{config.schema_name} present"
            if schema
            else f"{config.schema_name} (created on first sync)"
        )
    return facts


def _vector_fact(installed: str | None, available: str | None) -> str:
    if installed is not None:
        if _version_tuple(installed) < ITERATIVE_SCAN_VERSION:
            return f"{installed} installed (0.8+ recommended: filtered HNSW scans)"
        return f"{installed} installed"
    if available is not None:
        return (
            f"missing: {available} is available but not created; memwell runs CREATE EXTENSION "
            "vector on first use (needs the CREATE privilege on the database)"
        )
    return "missing: install pgvector on the server (0.8+)"


def diagnostics() -> dict[str, Any]:
    """``check_server`` with the ``[backends.postgres]`` section of the current workspace."""
    from memwell.plugin import get_registry, load_settings, plugin_config, resolve_workspace

    registry = get_registry()
    settings = load_settings(resolve_workspace(None), registry=registry)
    section = plugin_config(PostgresConfig, settings.backends.get("postgres"), "backends.postgres")
    config = section if isinstance(section, PostgresConfig) else PostgresConfig()
    return check_server(config)
