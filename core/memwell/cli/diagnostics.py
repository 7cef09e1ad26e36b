"""What ``memwell plugins`` and ``memwell doctor`` report."""

from __future__ import annotations

import os
import sqlite3
import sys
from typing import Any

from ..plugins import PluginRegistry


def plugin_rows(registry: PluginRegistry) -> list[dict[str, Any]]:
    """One row per plugin: name, distribution, version, status, what it provides, error."""
    registry.resolve()
    rows = []
    for info in sorted(registry.infos.values(), key=lambda i: i.name):
        provides = [("backend", b) for b in info.backends]
        provides += [("provider", p) for p in info.providers]
        rows.append(
            {
                "name": info.name,
                "distribution": info.distribution,
                "version": info.version,
                "status": info.status,
                "provides": provides,
                "kinds": sorted({kind for kind, _ in provides}),
                "error": info.error,
                "api": info.api or "undeclared",
            }
        )
    return rows


def _stdlib_sqlite() -> dict[str, Any]:
    conn = sqlite3.connect(":memory:")
    facts: dict[str, Any] = {"stdlib sqlite3": sqlite3.sqlite_version}
    for name, ddl in (
        ("stdlib fts5", "CREATE VIRTUAL TABLE a USING fts5(x)"),
        ("stdlib trigram", "CREATE VIRTUAL TABLE b USING fts5(x, tokenize='trigram')"),
    ):
        try:
            conn.execute(ddl)
            facts[name] = "yes"
        except sqlite3.Error as exc:
            facts[name] = f"no ({exc})"
    facts["stdlib load_extension"] = "yes" if hasattr(conn, "enable_load_extension") else "no"
    conn.close()
    return facts


def doctor_report(registry: PluginRegistry) -> dict[str, dict[str, Any]]:
    """Sections of facts: Python and SQLite, each backend's diagnostics, plugins, keys."""
    report: dict[str, dict[str, Any]] = {
        "python": {"version": sys.version.split()[0], **_stdlib_sqlite()}
    }
    for name, backend in registry.backends.items():
        if backend.diagnostics is None:
            continue
        try:
            report[f"backend {name}"] = backend.diagnostics()
        except Exception as exc:
            report[f"backend {name}"] = {"error": f"{type(exc).__name__}: {exc}"}
    report["plugins"] = {
        row["name"]: f"{row['status']}, API {row['api']}"
        + (f" ({row['error']})" if row["error"] else "")
        for row in plugin_rows(registry)
    }
    keys: dict[str, Any] = {}
    for pid, spec in registry.providers.items():
        if spec.transport == "local":
            keys[pid] = "local (no key needed)"
        elif any(os.environ.get(var) for var in spec.key_env):
            found = next(var for var in spec.key_env if os.environ.get(var))
            keys[pid] = f"key present ({found})"
        else:
            keys[pid] = f"key missing (set {' or '.join(spec.key_env) or 'remote.api_key'})"
    report["providers"] = keys
    return report
