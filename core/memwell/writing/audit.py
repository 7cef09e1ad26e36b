"""The audit log: one line per memory write, appended to ``memory/meta/audit.log``.

A line is tab-separated: UTC time, channel (``cli``, ``mcp``, ``api``, ``watch``), operation
(``append``, ``create``, ``replace``, ``promote``, ``capture``, ``reflect``...), the file, the
lines written (``L3-L5``) and the SHA-256 of the written text (``sha256:<hex>``). The text
itself never reaches the log, so neither does a secret. The log is only ever appended to (an
``O_APPEND`` write of one whole line); a line left broken by a crash is closed by the next
one, and a failed append never stops the write it records: the caller gets the reason.

The log is not Markdown, so it is not indexed; it lives under ``memory/`` and obeys the same
containment rule as every write (no symlinked component, nothing outside the workspace).
"""

from __future__ import annotations

import hashlib
import os
from datetime import datetime, timezone
from pathlib import Path
from typing import Literal, get_args

from memwell.contract.errors import PathNotAllowedError
from memwell.sources.discovery import MEMORY_DIR

Channel = Literal["cli", "mcp", "api", "watch"]
"""Where a write came from."""

CHANNELS: tuple[str, ...] = get_args(Channel)
META_DIR = f"{MEMORY_DIR}/meta"
"""Where memwell keeps its own records about memory."""
AUDIT_LOG = f"{META_DIR}/audit.log"


def check_channel(channel: str) -> Channel:
    """``channel`` if it is one of :data:`CHANNELS`; else a :class:`ValueError` naming them."""
    if channel not in CHANNELS:
        raise ValueError(f"channel must be one of {', '.join(CHANNELS)}; got {channel!r}")
    return channel  # type: ignore[return-value]


def meta_file(workspace: Path, name: str) -> Path:
    """``memory/meta/<name>`` of ``workspace``, its directories created.

    :raises PathNotAllowedError: a component of the path is a symlink, or not a directory.
    """
    ws = Path(os.path.realpath(workspace))
    meta = ws / META_DIR
    meta.mkdir(parents=True, exist_ok=True)
    target = meta / name
    if os.path.realpath(meta) != str(meta) or target.is_symlink():
        raise PathNotAllowedError(f"path not allowed: goes through a symlink: {META_DIR}/{name}")
    return target


def _printable(text: str) -> str:
    """``text`` with tabs, newlines and other control characters escaped (one field)."""
    return "".join(c if c.isprintable() else f"\\x{ord(c):02x}" for c in text)


def audit_line(
    *,
    when: datetime,
    channel: Channel,
    operation: str,
    path: str,
    start_line: int,
    end_line: int,
    content: bytes,
) -> str:
    """One audit line (with its ``\\n``); ``content`` is hashed, never written."""
    stamp = when.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    digest = hashlib.sha256(content).hexdigest()
    fields = (stamp, channel, _printable(operation), _printable(path))
    return "\t".join((*fields, f"L{start_line}-L{end_line}", f"sha256:{digest}")) + "\n"


def append_audit(workspace: Path, line: str) -> str | None:
    """Append ``line`` to the workspace's audit log; the reason it failed, else None.

    A last line left without its newline (a crash mid-append) is closed first, so the new
    line stays whole.
    """
    try:
        path = meta_file(workspace, "audit.log")
        flags = os.O_RDWR | os.O_APPEND | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0)
        fd = os.open(path, flags, 0o644)
        try:
            size = os.fstat(fd).st_size
            data = line.encode("utf-8", "surrogateescape")
            if size and os.pread(fd, 1, size - 1) != b"\n":
                data = b"\n" + data
            os.write(fd, data)
        finally:
            os.close(fd)
    except (OSError, PathNotAllowedError) as exc:
        return f"audit log not written: {type(exc).__name__}: {exc}"
    return None
