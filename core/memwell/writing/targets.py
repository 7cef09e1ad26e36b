"""Which files a memory write may touch, and how a target name maps to a path.

A write goes through the read rules of :func:`memwell.sources.paths.resolve_read_path`
(Markdown memory files only, realpath containment, the file itself not a symlink) and three
stricter ones, so every written file is one the index sees: it is ``MEMORY.md``,
``memory.md`` or under ``memory/`` of the workspace (extra paths are read-only), no component
of its path is a symlink (not even one pointing back inside), and no directory on the way is
one discovery skips (``.git``, ``node_modules``...).
"""

from __future__ import annotations

import os
from pathlib import Path, PurePosixPath

from memwell.contract.errors import PathNotAllowedError
from memwell.sources.discovery import (
    MEMORY_DIR,
    ROOT_MEMORY_FILES,
    SKIPPED_DIR_NAMES,
    relative_path,
)
from memwell.sources.paths import is_memory_path, resolve_read_path
from memwell.writing.names import check_file_name

DAILY_FORMAT = "%Y-%m-%d"
"""File name (without ``.md``) of the daily note, ``memory/YYYY-MM-DD.md``."""


def target_path(name: str) -> str:
    """The workspace path a write target names.

    ``MEMORY.md`` and paths under ``memory/`` stay as they are; any other relative name is a
    topic under ``memory/`` (``projects/billing`` -> ``memory/projects/billing.md``). ``.md`` is
    added to a name without a suffix. Absolute paths are kept for the rules to judge.

    :raises PathNotAllowedError: the name breaks a rule of :func:`~.names.check_file_name`.
    """
    check_file_name(name)
    raw = name.strip().replace("\\", "/")
    if not raw:
        raise PathNotAllowedError("path required")
    if not PurePosixPath(raw).suffix:
        raw += ".md"
    if os.path.isabs(raw) or is_memory_path(raw) or raw.startswith(".."):
        return raw
    return f"{MEMORY_DIR}/{raw}"


def resolve_write_path(workspace: Path, rel_path: str) -> tuple[Path, str]:
    """Check ``rel_path`` against the write rules; return ``(absolute path, display path)``.

    :raises PathNotAllowedError: with the read rules' messages, or naming the stricter rule.
    """
    ws = Path(os.path.realpath(workspace))
    real, display = resolve_read_path(ws, rel_path)
    if relative_path(real, ws) != display:
        raise PathNotAllowedError(f"path not allowed: goes through a symlink: {display}")
    parts = display.split("/")
    if display not in ROOT_MEMORY_FILES and parts[0] != MEMORY_DIR:
        raise PathNotAllowedError(f"path not allowed: not a writable memory file: {display}")
    skipped = SKIPPED_DIR_NAMES.intersection(parts[:-1])
    if skipped:
        raise PathNotAllowedError(
            f"path not allowed: inside {sorted(skipped)[0]!r}, which is never indexed: {display}"
        )
    return real, display


def ensure_parent(workspace: Path, real: Path, display: str) -> None:
    """Create the missing directories above ``real``, then check the rules again.

    The second check catches a directory swapped for a symlink while they were created.
    """
    real.parent.mkdir(parents=True, exist_ok=True)
    again, _ = resolve_write_path(workspace, display)
    if again != real:
        raise PathNotAllowedError(f"path not allowed: changed while writing: {display}")
