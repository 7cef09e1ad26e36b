"""Cheap checks that an index file is a whole SQLite database before it is opened."""

from __future__ import annotations

import struct
from pathlib import Path

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
