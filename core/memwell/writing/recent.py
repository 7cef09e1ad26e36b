"""Recent activity: the memory files that changed last."""

from __future__ import annotations

import os
from collections.abc import Sequence
from datetime import datetime, timezone
from pathlib import Path

from memwell.sources.discovery import list_memory_files, relative_path
from memwell.writing.results import RecentFile


def recent_files(
    workspace: Path, limit: int | None, extra_paths: Sequence[str] = ()
) -> list[RecentFile]:
    """The ``limit`` (``None``: all) most recently modified memory files, newest first (ties
    by path).

    Lists the files the index sees (``MEMORY.md``, ``memory/**/*.md``, the extra paths);
    a file that vanishes while listed is left out.
    """
    ws = Path(os.path.abspath(workspace))
    entries: list[tuple[int, str, int]] = []
    for path in list_memory_files(ws, extra_paths):
        try:
            st = os.lstat(path)
        except FileNotFoundError:
            continue
        entries.append((st.st_mtime_ns, relative_path(path, ws), st.st_size))
    entries.sort(key=lambda entry: (-entry[0], entry[1]))
    return [
        RecentFile(
            path=rel,
            modified=datetime.fromtimestamp(mtime_ns / 1e9, tz=timezone.utc),
            bytes=size,
        )
        for mtime_ns, rel, size in entries[: None if limit is None else max(0, limit)]
    ]
