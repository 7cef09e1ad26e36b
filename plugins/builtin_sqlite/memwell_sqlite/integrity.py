"""Checks that an index file is a whole SQLite database before it is opened.

The header check is cheap and reads the main file alone. When a write-ahead log sits next to
the file, the main file may legitimately look short (a checkpoint that ran out of disk space
half way); SQLite, reading through the WAL, then has the final word.
"""

from __future__ import annotations

import os
import struct
from pathlib import Path

from .driver import connect
from .faults import Fault, classify

_MAGIC = b"SQLite format 3\x00"


def file_problem(path: Path) -> str | None:
    """Why ``path`` is not a complete SQLite file, or ``None`` if it looks whole.

    Reads only the 100-byte header: the magic string, the page size and the in-header page
    count (valid when the change counter matches ``version-valid-for``), so a truncated or
    overwritten file is caught before any query runs.
    """
    try:
        size = path.stat().st_size
        with path.open("rb") as fh:
            header = fh.read(100)
    except OSError as exc:
        return f"cannot read index: {exc}"
    if size == 0:
        return "index file is empty"
    if len(header) < 100 or not header.startswith(_MAGIC):
        return "index file is not a SQLite database"
    page_size = struct.unpack(">H", header[16:18])[0]
    page_size = 65536 if page_size == 1 else page_size
    if page_size < 512 or page_size & (page_size - 1):
        return f"index header has an invalid page size {page_size}"
    change_counter, pages, valid_for = (
        struct.unpack(">I", header[24:28])[0],
        struct.unpack(">I", header[28:32])[0],
        struct.unpack(">I", header[92:96])[0],
    )
    if change_counter == valid_for and pages and size < pages * page_size:
        return f"index file is truncated ({size} bytes, header says {pages * page_size})"
    if size % page_size:
        return f"index file size {size} is not a multiple of its page size {page_size}"
    return None


def has_wal(path: Path) -> bool:
    """Whether ``path`` has a non-empty write-ahead log (data not yet in the main file)."""
    try:
        return os.stat(f"{path}-wal").st_size > 0
    except OSError:
        return False


def sqlite_problem(path: Path) -> str | None:
    """What ``PRAGMA quick_check`` (run by SQLite, reading the WAL) finds wrong, or ``None``.

    Errors that are not corruption (locked, out of space, read-only) are raised: they say
    nothing about the file.
    """
    conn = None
    try:
        conn, _ = connect(path, load_vec=False)
        rows = [str(r[0]) for r in conn.execute("PRAGMA quick_check(5)")]
    except Exception as exc:
        if classify(exc) is Fault.CORRUPT:
            return f"{type(exc).__name__}: {exc}"
        raise
    finally:
        if conn is not None:
            conn.close()
    return None if rows == ["ok"] else "; ".join(rows)


def index_problem(path: Path) -> str | None:
    """Why ``path`` is damaged, or ``None``: the header check, confirmed by SQLite when a WAL
    may hold what the main file lacks."""
    problem = file_problem(path)
    if problem is not None and has_wal(path) and not problem.startswith("cannot read"):
        return sqlite_problem(path)
    return problem
