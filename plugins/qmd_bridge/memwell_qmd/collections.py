"""Which qmd collections a workspace needs, and bringing qmd's set in line with them.

Default collections (spec section 6.1): ``memory-root`` is the workspace with the pattern
``{MEMORY.md,memory.md}`` (root files only) and ``memory-dir`` is ``<workspace>/memory`` with
``**/*.md``. Extra collections come from the backend's ``collections`` and the global
``extra_paths``; a single ``.md`` file becomes its directory with the file's name as pattern.
"""

from __future__ import annotations

import logging
import os
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from memwell.plugin import MEMORY_DIR, ROOT_MEMORY_FILES

from .config import QmdCollection
from .errors import QmdCollectionConflict, QmdCollectionMissing, QmdTimeout
from .process import CommandRunner
from .state import QmdState

log = logging.getLogger(__name__)

ROOT_COLLECTION = "memory-root"
DIR_COLLECTION = "memory-dir"
ROOT_PATTERN = "{" + ",".join(ROOT_MEMORY_FILES) + "}"
DEFAULT_PATTERN = "**/*.md"


@dataclass(frozen=True)
class CollectionSpec:
    """A collection the bridge manages.

    ``root`` is the directory qmd indexes; ``scope`` is what ``read_file`` may read through
    ``qmd/<name>/…`` paths (the directory, or the single file of a file entry). ``default``
    marks the two memory collections, whose files the core's memory-path rules already cover.
    """

    name: str
    root: Path
    pattern: str
    scope: Path
    default: bool = False

    def same_target(self, path: str, pattern: str) -> bool:
        return pattern == self.pattern and os.path.realpath(path) == os.path.realpath(self.root)


def sanitize_name(raw: str) -> str:
    """Lowercase, runs of anything but ``[a-z0-9-]`` become ``-``, dashes trimmed."""
    name = re.sub(r"[^a-z0-9-]+", "-", raw.lower()).strip("-")
    return name or "collection"


def _unique(name: str, used: set[str]) -> str:
    candidate, n = name, 1
    while candidate in used:
        n += 1
        candidate = f"{name}-{n}"
    used.add(candidate)
    return candidate


def desired_collections(
    workspace: Path,
    extras: Sequence[QmdCollection],
    extra_paths: Iterable[str],
    *,
    include_default_memory: bool,
) -> list[CollectionSpec]:
    """The collections to manage, de-duplicated by (real root, pattern), names unique."""
    ws = Path(os.path.abspath(workspace))
    specs: list[CollectionSpec] = []
    used: set[str] = set()
    seen: set[tuple[str, str]] = set()

    def add(name: str, root: Path, pattern: str, scope: Path, default: bool = False) -> None:
        key = (os.path.realpath(root), pattern)
        if key in seen:
            return
        seen.add(key)
        specs.append(CollectionSpec(_unique(name, used), root, pattern, scope, default))

    if include_default_memory:
        add(ROOT_COLLECTION, ws, ROOT_PATTERN, ws, default=True)
        add(DIR_COLLECTION, ws / MEMORY_DIR, DEFAULT_PATTERN, ws / MEMORY_DIR, default=True)
    entries = [*extras, *(QmdCollection(path=p) for p in extra_paths)]
    for entry in entries:
        path = Path(os.path.normpath(ws / os.path.expanduser(entry.path.strip())))
        if path.name.endswith(".md") and path.is_file():
            add(sanitize_name(entry.name or path.stem), path.parent, path.name, path)
        else:
            add(sanitize_name(entry.name or path.name), path, entry.pattern, path)
    return specs


def reconcile(
    runner: CommandRunner,
    state: QmdState,
    desired: Sequence[CollectionSpec],
    *,
    owned: set[str],
    timeout: float,
    add_timeout: float,
) -> tuple[set[str], list[str]]:
    """Make qmd's collections match ``desired``; return ``(present names, missing names)``.

    Kept: a collection with our name, path and pattern. Rebound (removed and added again): one
    with our name but another path or pattern, or another name holding our (path, pattern).
    Removed: collections we own (``owned``) that are no longer desired. Foreign collections
    are left alone. A desired collection whose directory does not exist yet is skipped and
    reported as missing; a later update adds it once the directory appears. An ``add`` that
    times out after qmd registered the collection (qmd registers it, then indexes) counts as
    present: the next ``qmd update`` finishes its index.
    """
    existing = state.read_collections()
    present: set[str] = set()
    missing: list[str] = []

    def remove(name: str) -> None:
        try:
            runner.run(["collection", "remove", name], timeout=timeout)
        except QmdCollectionMissing:
            log.debug("qmd collection %s was already gone", name)
        existing.pop(name, None)

    for spec in desired:
        entry = existing.get(spec.name)
        if entry is not None and spec.same_target(entry.path, entry.pattern):
            present.add(spec.name)
            continue
        if not spec.root.is_dir():
            missing.append(spec.name)
            continue
        if entry is not None:
            log.info("rebinding qmd collection %s to %s (%s)", spec.name, spec.root, spec.pattern)
            remove(spec.name)
        for other, other_entry in list(existing.items()):
            if other not in present and spec.same_target(other_entry.path, other_entry.pattern):
                log.info(
                    "qmd collection %s holds %s; rebinding it as %s", other, spec.root, spec.name
                )
                remove(other)
        args = ["collection", "add", str(spec.root), "--name", spec.name, "--mask", spec.pattern]
        try:
            runner.run(args, timeout=add_timeout)
        except (QmdCollectionConflict, QmdTimeout) as exc:
            # another writer added the same collection meanwhile, or indexing it outlasted the
            # timeout: accept it if qmd has it as we asked
            entry = state.read_collections().get(spec.name)
            if entry is None or not spec.same_target(entry.path, entry.pattern):
                raise
            if isinstance(exc, QmdTimeout):
                log.info("qmd collection %s added; the next update finishes its index", spec.name)
        present.add(spec.name)
    wanted = {spec.name for spec in desired}
    for stale in sorted(owned - wanted):
        if stale in existing:
            log.info("removing stale qmd collection %s", stale)
            remove(stale)
    return present, missing
