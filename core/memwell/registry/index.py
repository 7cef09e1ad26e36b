"""What each installed plugin entry point registers, remembered between processes.

A one-shot command needs one backend and at most one embedding provider, but which entry
point provides a name is only known after importing it, and importing every plugin costs
more than the search itself. The index remembers, per entry point, the names it registered
of each kind (with each name's ``auto_priority``), together with the stat of its package's
files. The registry (:mod:`memwell.registry.plugins`) then imports only the entry points that
provide the names it is asked for. A record is trusted only while its entry point is unchanged: the
same target, distribution and version, and the same files (path, mtime, size) in the package
directory that defines it; anything else makes it unknown and the entry point is imported
again, which rewrites the record.

The index lives in ``$XDG_CACHE_HOME/memwell/plugin-index.json``; it is written best effort
(a read-only cache directory only costs speed). This module imports nothing heavy.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any, Protocol

#: The kinds of names a plugin registers, as :class:`memwell.registry.plugins.PluginInfo` names
#: them.
KINDS = ("backend", "provider", "text generator", "reranker")
#: Records kept per entry point key (several virtual environments may share one cache).
RECORDS_PER_KEY = 4
FORMAT = 1

Provides = dict[str, dict[str, int | None]]
"""kind -> {name: auto_priority (None: never auto-selected)}."""


class EntryPointLike(Protocol):
    """The parts of :class:`memwell.util.entry_points.EntryPointRef` the index uses."""

    @property
    def name(self) -> str: ...


def index_file() -> Path:
    """Where the index is stored."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "memwell" / "plugin-index.json"


def entry_point_key(ep: EntryPointLike) -> str | None:
    """``name=target@distribution version``; ``None`` for an entry point without a target
    (one built in memory), which is never indexed."""
    value = getattr(ep, "value", None)
    if not isinstance(value, str):
        return None
    dist = getattr(ep, "distribution", None)
    if dist is None:
        return f"{ep.name}={value}@ "
    return f"{ep.name}={value}@{dist} {getattr(ep, 'version', None)}"


def _stat(path: str) -> list[int] | None:
    try:
        info = os.stat(path)
    except OSError:
        return None
    return [info.st_mtime_ns, info.st_size]


def module_files(module_name: str) -> dict[str, list[int]] | None:
    """The stats a record depends on: every ``.py`` file of the package that defines the
    imported module ``module_name`` (or the module's file alone outside a package), plus
    the package directory itself (files added or removed); ``None`` if it has no file."""
    module = sys.modules.get(module_name)
    filename = getattr(module, "__file__", None)
    if not isinstance(filename, str):
        return None
    directory = os.path.dirname(os.path.abspath(filename))
    if not os.path.isfile(os.path.join(directory, "__init__.py")):
        stat = _stat(filename)
        return {filename: stat} if stat is not None else None
    files: dict[str, list[int]] = {}
    for path in [directory, *sorted(str(p) for p in Path(directory).glob("*.py"))]:
        stat = _stat(path)
        if stat is None:
            return None
        files[path] = stat
    return files


def _unchanged(files: Any) -> bool:
    if not isinstance(files, dict) or not files:
        return False
    return all(_stat(path) == stat for path, stat in files.items())


def _valid_provides(data: Any) -> Provides | None:
    if not isinstance(data, dict) or set(data) != set(KINDS):
        return None
    for names in data.values():
        if not isinstance(names, dict):
            return None
        if not all(p is None or isinstance(p, int) for p in names.values()):
            return None
    return data


class PluginIndex:
    """The records of one index file, loaded on first use and saved by :meth:`save`."""

    def __init__(self, path: Path | None = None) -> None:
        self.path = path or index_file()
        self._records: dict[str, list[dict[str, Any]]] | None = None
        self._changed = False

    def _load(self) -> dict[str, list[dict[str, Any]]]:
        if self._records is None:
            try:
                data = json.loads(self.path.read_text(encoding="utf-8"))
            except (OSError, ValueError):
                data = None
            ok = isinstance(data, dict) and data.get("format") == FORMAT
            records = data.get("records") if ok and isinstance(data, dict) else None
            self._records = records if isinstance(records, dict) else {}
        return self._records

    def lookup(self, ep: EntryPointLike) -> Provides | None:
        """What ``ep`` registered when it was last imported, if it is unchanged since."""
        key = entry_point_key(ep)
        if key is None:
            return None
        for record in self._load().get(key, []):
            if isinstance(record, dict) and _unchanged(record.get("files")):
                return _valid_provides(record.get("provides"))
        return None

    def store(self, ep: EntryPointLike, module_name: str, provides: Provides) -> None:
        """Remember what ``ep`` (whose target module is ``module_name``) registered."""
        key = entry_point_key(ep)
        files = module_files(module_name)
        if key is None or files is None:
            return
        record = {"files": files, "provides": provides}
        records = self._load().get(key, [])
        if records and records[0] == record:
            return  # already the newest record: rewriting the file would change nothing
        kept = [r for r in records if r.get("files", {}).keys() != files.keys()]
        self._load()[key] = [record, *kept][:RECORDS_PER_KEY]
        self._changed = True

    def save(self) -> None:
        """Write the index if a record changed (atomically; errors are ignored)."""
        if not self._changed:
            return
        self._changed = False
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            tmp = self.path.with_name(f"{self.path.name}.{os.getpid()}.tmp")
            tmp.write_text(json.dumps({"format": FORMAT, "records": self._load()}))
            os.replace(tmp, self.path)
        except OSError:
            pass
