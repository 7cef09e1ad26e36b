"""What ``memwell plugins`` and ``memwell doctor`` report."""

from __future__ import annotations

import os
import sqlite3
import sys
from pathlib import Path
from typing import Any

from memwell.contract.config import MemwellSettings
from memwell.registry.plugins import PluginRegistry
from memwell.runtime.factory import create_backend

PROBE_QUERY = "memwell doctor probe"
FAILED = "FAILED: "


def plugin_rows(registry: PluginRegistry) -> list[dict[str, Any]]:
    """One row per plugin: name, distribution, version, status, what it provides, error."""
    registry.resolve()
    rows = []
    for info in sorted(registry.infos.values(), key=lambda i: i.name):
        provides = [("backend", b) for b in info.backends]
        provides += [("provider", p) for p in info.providers]
        provides += [("text generator", t) for t in info.text_generators]
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
                "capabilities": {
                    name: sorted(registry.backends[name].capabilities)
                    for name in info.backends
                    if name in registry.backends
                },
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
    checks = [(f"backend {n}", b.diagnostics) for n, b in registry.backends.items()]
    checks += [(f"provider {n}", p.diagnostics) for n, p in registry.providers.items()]
    for section, diagnostics in checks:
        if diagnostics is None:
            continue
        try:
            report[section] = diagnostics()
        except Exception as exc:
            report[section] = {"error": f"{type(exc).__name__}: {exc}"}
    report["plugins"] = {
        row["name"]: f"{row['status']}, API {row['api']}"
        + (f" ({row['error']})" if row["error"] else "")
        for row in plugin_rows(registry)
    }
    keys: dict[str, Any] = {}
    for pid, spec in registry.providers.items():
        unavailable = report.get(f"provider {pid}", {}).get("unavailable")
        if unavailable:
            keys[pid] = f"{FAILED}unavailable here: {unavailable}"
        elif spec.transport == "local":
            keys[pid] = "local (no key needed)"
        elif any(os.environ.get(var) for var in spec.key_env):
            found = next(var for var in spec.key_env if os.environ.get(var))
            keys[pid] = f"key present ({found})"
        else:
            keys[pid] = f"key missing (set {' or '.join(spec.key_env) or 'remote.api_key'})"
    report["providers"] = keys
    return report


def _failed(exc: BaseException) -> str:
    return f"{FAILED}{type(exc).__name__}: {exc}"


def workspace_report(
    workspace: Path, settings: MemwellSettings, registry: PluginRegistry
) -> dict[str, str]:
    """Open the workspace's configured backend and provider, probe them, run a probe search.

    The backend is built directly, without the fallback that ``open_memory`` adds, so its own
    failure is reported; a failed step's value starts with ``FAILED:``. Nothing is indexed.
    """
    steps = {"workspace": str(workspace), "backend": settings.backend}
    try:
        manager = create_backend(settings.backend, settings, registry, workspace, "status")
    except Exception as exc:
        steps["backend"] = f"{settings.backend}: {_failed(exc)}"
        return steps
    try:
        status = manager.status()
        steps["backend"] = (
            f"{status.backend}: ok ({status.files} files, {status.chunks} chunks indexed)"
        )
        provider = f"{status.provider} (requested {settings.provider}, mode {status.search_mode})"
        if status.provider_unavailable_reason:
            provider += f": {status.provider_unavailable_reason}"
        keyword_only = status.search_mode == "fts-only"
        if status.search_mode == "disabled":
            provider = FAILED + provider
        steps["provider"] = provider
        for name, probe in (
            ("embedding", manager.probe_embedding),
            ("vector", manager.probe_vector),
        ):
            if keyword_only:
                steps[f"probe {name}"] = "skipped (keyword-only mode)"
                continue
            result = probe()
            steps[f"probe {name}"] = "ok" if result.ok else f"{FAILED}{result.error}"
        hits = manager.search(PROBE_QUERY, max_results=1, min_score=0.0)
        steps["probe search"] = f"ok ({len(hits)} hit{'s' if len(hits) != 1 else ''})"
    except Exception as exc:
        steps["probe search" if "provider" in steps else "status"] = _failed(exc)
    finally:
        manager.close()
    return steps


def report_failed(report: dict[str, dict[str, Any]]) -> bool:
    """True when any reported step failed."""
    return any(
        isinstance(value, str) and FAILED in value
        for section in report.values()
        for value in section.values()
    )
