"""What an error on an index file means: damage, a full disk, or a passing condition.

SQLite's own result code decides when the driver exposes it (``sqlite_errorcode``, Python
3.11+); an ``OSError`` is judged by its errno; the message is consulted only for errors that
carry neither. Only :attr:`Fault.CORRUPT` may get an index quarantined.
"""

from __future__ import annotations

import enum
import errno
import re

from memwell.errors import BackendUnavailableError, MemwellError


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


# Primary SQLite result codes (https://sqlite.org/rescode.html): CORRUPT and NOTADB; FULL;
# PERM, BUSY, LOCKED, NOMEM, READONLY, INTERRUPT, IOERR, CANTOPEN and PROTOCOL.
_SQLITE_CODES = {
    **dict.fromkeys((11, 26), Fault.CORRUPT),
    13: Fault.FULL,
    **dict.fromkeys((3, 5, 6, 7, 8, 9, 10, 14, 15), Fault.TRANSIENT),
}
_FULL_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT})
_MESSAGES = (
    (re.compile(r"disk is full|no space left|quota exceeded", re.I), Fault.FULL),
    # sqlite-vec reports a damaged page under its vectors as "opening blob failed".
    (
        re.compile(r"malformed|not a database|corrupt|file is encrypted|opening blob failed", re.I),
        Fault.CORRUPT,
    ),
    (
        re.compile(
            r"locked|busy|unable to open|out of memory|interrupt|too many open|read-?only"
            r"|permission|disk I/O",
            re.I,
        ),
        Fault.TRANSIENT,
    ),
)


def classify(exc: BaseException) -> Fault:
    """The :class:`Fault` an exception raised while using an index file stands for."""
    if isinstance(exc, IndexDamagedError):
        return Fault.CORRUPT
    if isinstance(exc, IndexDiskFullError):
        return Fault.FULL
    if isinstance(exc, MemwellError):
        return Fault.OTHER
    code = getattr(exc, "sqlite_errorcode", None)
    if isinstance(code, int) and (code & 0xFF) in _SQLITE_CODES:
        return _SQLITE_CODES[code & 0xFF]
    if isinstance(exc, OSError) and exc.errno is not None:
        return Fault.FULL if exc.errno in _FULL_ERRNOS else Fault.TRANSIENT
    for pattern, fault in _MESSAGES:
        if pattern.search(str(exc)):
            return fault
    return Fault.OTHER


def disk_full_error(exc: BaseException, where: str) -> IndexDiskFullError:
    """The user-facing error for an out-of-space failure while writing ``where``."""
    return IndexDiskFullError(
        f"out of disk space writing the index in {where} ({type(exc).__name__}: {exc}); "
        "free some disk space and sync again; the previous index keeps serving"
    )
