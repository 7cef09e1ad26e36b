"""What an error on an index file means: damage, a full disk, or a passing condition.

SQLite's own result code decides (``sqlite_errorcode``, set by the stdlib ``sqlite3`` and by
``sqlean``); an ``OSError`` is judged by its errno; memwell's own errors by their type. Anything
else (a bug, a provider failure) is :attr:`Fault.OTHER`, whatever its message says. Only
:attr:`Fault.CORRUPT` may get an index quarantined.
"""

from __future__ import annotations

import enum
import errno
import re

from memwell.plugin import BackendUnavailableError, MemwellError
from memwell.plugin_sdk import sqlite_errors


class Fault(enum.Enum):
    """The classes of failure the manager reacts to differently."""

    CORRUPT = "corrupt"  # the file is damaged as SQLite sees it: quarantine and rebuild
    FULL = "full"  # out of disk space: report it, keep the old index serving
    TRANSIENT = "transient"  # locked, busy, read-only, I/O: not the file's fault, re-raise
    OTHER = "other"  # a bug or a provider failure elsewhere: re-raise


class IndexDamagedError(BackendUnavailableError):
    """An index file holds something SQLite accepts but memwell cannot read (its metadata)."""


class IndexDiskFullError(BackendUnavailableError):
    """The index could not be written because its filesystem is out of space."""


class IndexReadOnlyError(BackendUnavailableError):
    """The index directory cannot be written (a read-only copy or mount)."""


_SQLITE_CODES = {
    **dict.fromkeys(sqlite_errors.CORRUPTION_CODES, Fault.CORRUPT),
    sqlite_errors.SQLITE_FULL: Fault.FULL,
    **dict.fromkeys(
        (
            sqlite_errors.SQLITE_PERM,
            *sqlite_errors.CONTENTION_CODES,
            sqlite_errors.SQLITE_NOMEM,
            sqlite_errors.SQLITE_READONLY,
            sqlite_errors.SQLITE_INTERRUPT,
            sqlite_errors.SQLITE_IOERR,
            sqlite_errors.SQLITE_CANTOPEN,
            sqlite_errors.SQLITE_PROTOCOL,
        ),
        Fault.TRANSIENT,
    ),
}
_FULL_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT})
# sqlite-vec reports a damaged page under its vectors with the generic SQLITE_ERROR code and
# this message: the one case where SQLite's code alone cannot tell damage from a bad query.
_VEC_DAMAGE = re.compile(r"opening blob failed")


def classify(exc: BaseException) -> Fault:
    """The :class:`Fault` an exception raised while using an index file stands for."""
    if isinstance(exc, IndexDamagedError):
        return Fault.CORRUPT
    if isinstance(exc, IndexDiskFullError):
        return Fault.FULL
    if isinstance(exc, MemwellError):
        return Fault.OTHER
    code = sqlite_errors.result_code(exc)
    if code is not None:
        if code == sqlite_errors.SQLITE_ERROR and _VEC_DAMAGE.search(str(exc)):
            return Fault.CORRUPT
        return _SQLITE_CODES.get(code, Fault.OTHER)
    if isinstance(exc, OSError) and exc.errno is not None:
        return Fault.FULL if exc.errno in _FULL_ERRNOS else Fault.TRANSIENT
    return Fault.OTHER


def disk_full_error(exc: BaseException, where: str) -> IndexDiskFullError:
    """The user-facing error for an out-of-space failure while writing ``where``."""
    return IndexDiskFullError(
        f"out of disk space writing the index in {where} ({type(exc).__name__}: {exc}); "
        "free some disk space and sync again; the previous index keeps serving"
    )
