"""The plugin subcommands ``memwell --help`` lists, cached so that help imports no plugin.

Plugins add commands through the ``memwell_cli_commands`` hook, which means importing every
plugin (and pydantic, numpy, ...): seconds on a busy machine, for a help screen. The names and
help lines are cached per set of installed plugins (their entry points and versions, and the
``MEMWELL_LOAD_PLUGINS`` allow-list); any change there reloads the plugins and rewrites it.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

ENTRY_POINT_GROUP = "memwell"
""":data:`memwell.registry.plugins.ENTRY_POINT_GROUP` (not imported: that module imports pluggy)."""


def _cache_file() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "memwell" / "cli-commands.json"


def plugin_fingerprint() -> str:
    """What the plugin command list depends on: installed entry points and the allow-list."""
    from memwell.util.entry_points import find_entry_points

    entries = sorted(
        f"{ep.name}={ep.value}@{ep.version or ''}" for ep in find_entry_points(ENTRY_POINT_GROUP)
    )
    return json.dumps([entries, os.environ.get("MEMWELL_LOAD_PLUGINS", "")])


def cached_commands(fingerprint: str) -> dict[str, str] | None:
    """``{name: short help}`` cached for ``fingerprint``, or ``None``."""
    try:
        data = json.loads(_cache_file().read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict) or data.get("fingerprint") != fingerprint:
        return None
    commands = data.get("commands")
    return commands if isinstance(commands, dict) else None


def store_commands(fingerprint: str, commands: dict[str, str]) -> None:
    """Cache the plugin commands (best effort: a read-only home only costs speed)."""
    path = _cache_file()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
        tmp.write_text(json.dumps({"fingerprint": fingerprint, "commands": commands}))
        os.replace(tmp, path)
    except OSError:
        pass
