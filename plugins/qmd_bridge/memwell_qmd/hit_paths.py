"""Where a qmd hit is: its collection and path, or its docid looked up in qmd's index, mapped
to the path memwell shows (workspace-relative, else ``qmd/<collection>/<path>``)."""

from __future__ import annotations

import logging
import os
import sqlite3
from collections.abc import Mapping
from pathlib import Path
from urllib.parse import unquote

from memwell.plugin_sdk import sqlite_errors

from .collections import CollectionSpec
from .errors import QmdBusy
from .parsing import QmdHit

log = logging.getLogger(__name__)


def within(path: str, root: str) -> bool:
    """Whether ``path`` is ``root`` or below it (both normalised)."""
    return os.path.commonpath([path, root]) == root


class HitLocator:
    """Maps qmd hits to the managed files; docid lookups are cached until :meth:`clear`."""

    def __init__(
        self, workspace: Path, by_name: Mapping[str, CollectionSpec], db_path: Path
    ) -> None:
        self.workspace = workspace
        self.by_name = by_name
        self.db_path = db_path
        self._cache: dict[str, list[tuple[str, str]]] = {}

    def clear(self) -> None:
        """Forget the docid lookups (after an update or a collection change)."""
        self._cache.clear()

    def _lookup(self, docid: str) -> list[tuple[str, str]]:
        """``(collection, path)`` rows for a docid, read-only from qmd's SQLite index."""
        if docid in self._cache:
            return self._cache[docid]
        db = self.db_path
        if not db.is_file():
            return []
        try:
            conn = sqlite3.connect(f"{db.as_uri()}?mode=ro", uri=True, timeout=1.0)
            try:
                conn.execute("PRAGMA busy_timeout = 1000")
                rows = conn.execute(
                    "SELECT collection, path FROM documents WHERE hash LIKE ? AND active = 1",
                    (docid + "%",),
                ).fetchall()
            finally:
                conn.close()
        except sqlite3.OperationalError as exc:
            if sqlite_errors.is_contention(exc):
                raise QmdBusy(f"qmd index busy while reading results: {exc}") from exc
            log.debug("qmd docid lookup failed: %s", exc)
            return []
        found = [(str(c), str(p)) for c, p in rows]
        self._cache[docid] = found
        return found

    def _join(self, spec: CollectionSpec, rel: str) -> Path | None:
        root = os.path.normpath(spec.root)
        candidates = [rel] if "%" not in rel else [rel, unquote(rel)]
        inside = [
            os.path.normpath(os.path.join(root, c))
            for c in candidates
            if within(os.path.normpath(os.path.join(root, c)), root)
        ]
        if not inside:
            return None
        return Path(next((p for p in inside if os.path.exists(p)), inside[0]))

    def _display_path(self, spec: CollectionSpec, abs_path: Path) -> str:
        """Workspace-relative if the real file is in the workspace, else ``qmd/<col>/<rel>``."""
        real, real_ws = os.path.realpath(abs_path), os.path.realpath(self.workspace)
        if within(real, real_ws) and real != real_ws:
            rel = Path(os.path.relpath(real, real_ws)).as_posix()
            if not rel.startswith("qmd/"):
                return rel
        return f"qmd/{spec.name}/{Path(os.path.relpath(abs_path, spec.root)).as_posix()}"

    def locate(self, hit: QmdHit) -> str | None:
        candidates: list[tuple[str, str]] = []
        if hit.collection is not None and hit.rel_path is not None:
            candidates.append((hit.collection, hit.rel_path))
        if hit.docid is not None and (hit.collection not in self.by_name or hit.rel_path is None):
            rows = self._lookup(hit.docid)
            candidates += sorted(rows, key=lambda r: (r[0] != hit.collection, r[1] != hit.rel_path))
        for collection, rel in candidates:
            spec = self.by_name.get(collection)
            if spec is None:
                continue
            path = self._join(spec, rel)
            if path is not None:
                return self._display_path(spec, path)
        return None
