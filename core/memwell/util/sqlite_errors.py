"""SQLite errors judged by their result code, never by their message.

The stdlib ``sqlite3`` (Python 3.11+) and ``sqlean`` set ``sqlite_errorcode`` (the extended
result code) and ``sqlite_errorname`` on every error SQLite itself reports; errors the Python
module raises on its own (a closed connection, a bad parameter) carry neither. On Python 3.10
the stdlib module sets no code, so there a ``sqlite3.Error`` whose message is exactly SQLite's
own text for a code (``sqlite3_errstr``) stands for that code. Codes are those of
https://sqlite.org/rescode.html.
"""

from __future__ import annotations

import sqlite3

SQLITE_ERROR = 1
SQLITE_PERM = 3
SQLITE_BUSY = 5
SQLITE_LOCKED = 6
SQLITE_NOMEM = 7
SQLITE_READONLY = 8
SQLITE_INTERRUPT = 9
SQLITE_IOERR = 10
SQLITE_CORRUPT = 11
SQLITE_FULL = 13
SQLITE_CANTOPEN = 14
SQLITE_PROTOCOL = 15
SQLITE_NOTADB = 26

#: ``sqlite3_errstr`` of the codes memwell reacts to (used only where no code is exposed).
_ERRSTR = {
    "database is locked": SQLITE_BUSY,
    "database table is locked": SQLITE_LOCKED,
    "database disk image is malformed": SQLITE_CORRUPT,
    "file is not a database": SQLITE_NOTADB,
    "database or disk is full": SQLITE_FULL,
    "attempt to write a readonly database": SQLITE_READONLY,
    "disk I/O error": SQLITE_IOERR,
    "unable to open database file": SQLITE_CANTOPEN,
}

CORRUPTION_CODES = frozenset({SQLITE_CORRUPT, SQLITE_NOTADB})
CONTENTION_CODES = frozenset({SQLITE_BUSY, SQLITE_LOCKED})


def result_code(exc: BaseException) -> int | None:
    """The primary result code of an error SQLite reported (``SQLITE_BUSY`` for
    ``SQLITE_BUSY_SNAPSHOT``), or ``None`` for any other exception."""
    code = getattr(exc, "sqlite_errorcode", None)
    if isinstance(code, int) and not isinstance(code, bool):
        return code & 0xFF
    if isinstance(exc, sqlite3.Error) and not hasattr(exc, "sqlite_errorcode"):
        return _ERRSTR.get(str(exc))
    return None


def is_corruption(exc: BaseException) -> bool:
    """Whether SQLite reported the database file as damaged or not a database."""
    return result_code(exc) in CORRUPTION_CODES


def is_contention(exc: BaseException) -> bool:
    """Whether SQLite reported a busy or locked database (another connection holds it)."""
    return result_code(exc) in CONTENTION_CODES
