"""Crash-safe file replacement and the cross-process write lock.

:func:`replace_file` writes a temporary file in the target's directory, fsyncs it, renames
it over the target and fsyncs the directory, so a reader or a crash sees the old bytes or the
new ones, never a mix. Right before the rename it checks, through a descriptor, that the file
is the one that was read (device and inode) and still holds the bytes read; if another editor
replaced it or changed those bytes, it refuses, so the caller reads again and redoes its edit.
Bytes an editor appended meanwhile (a shell ``>>``, a logger; they may land up to the rename,
as POSIX has no compare-and-swap rename, or just after it from an editor that opened the file
before) are read back through that descriptor once the old file has stopped growing for a
few milliseconds, and returned; the caller carries them over (:func:`append_bytes`, or a
merge) so no editor line is lost. An editor descheduled for longer than that wait between
opening the file and writing to it can still write into the replaced file; nothing short of
the editor taking memwell's lock closes that window. A new file is linked into place, which
fails rather than replace a file that appeared meanwhile. :func:`write_lock` is an
``fcntl.flock`` lock on a file in the index directory, held across the read-modify-write so
two memwell writers (threads or processes) never lose each other's appends.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import secrets
import stat
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from memwell.contract.errors import PathNotAllowedError, WriteRefusedError
from memwell.util.lazy_import import lazy_logger, lazy_pattern

_READ_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK
_TEMP_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW
_LOCK_POLL_S = 0.01
_SETTLE_POLL_S = 0.002
_SETTLE_S = 0.006
_SETTLE_MAX_S = 0.05
_TEMP_HEX = 12
_PID_DIGITS = 7  # Linux's pid_max is at most 2**22
TEMP_NAME_EXTRA_BYTES = len(".") + len(".") + _PID_DIGITS + len("-") + _TEMP_HEX + len(".tmp")
"""The most a temporary file's name (``.<name>.<pid>-<hex>.tmp``) adds to the target's."""
STALE_TEMP_SECONDS = 3600.0
"""Age after which a temporary file whose writer cannot be told is removed."""
_TEMP_NAME = lazy_pattern(
    rf"^\.(?P<name>.+\.md)\.(?:(?P<pid>[0-9]{{1,{_PID_DIGITS}}})-)?[0-9a-f]{{{_TEMP_HEX}}}\.tmp$"
)

log = lazy_logger(__name__)


@dataclass(frozen=True)
class FileState:
    """A file's bytes as read, and the stat identity a later replace checks against."""

    data: bytes
    identity: tuple[int, int, int, int] | None
    mode: int | None

    @property
    def exists(self) -> bool:
        return self.identity is not None


def _identity(st: os.stat_result) -> tuple[int, int, int, int]:
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)


def read_state(path: Path) -> FileState:
    """Read ``path`` without following a symlink; a missing file has no identity."""
    try:
        fd = os.open(path, _READ_FLAGS)
    except FileNotFoundError:
        return FileState(b"", None, None)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise PathNotAllowedError(f"path not allowed: symlink: {path.name}") from exc
        raise
    with os.fdopen(fd, "rb") as handle:
        st = os.fstat(handle.fileno())
        if not stat.S_ISREG(st.st_mode):
            raise PathNotAllowedError(f"path not allowed: not a regular file: {path.name}")
        return FileState(handle.read(), _identity(st), stat.S_IMODE(st.st_mode))


def temp_name(name: str) -> str:
    """A fresh temporary file name for ``name``, tagged with this process's id."""
    return f".{name}.{os.getpid()}-{secrets.token_hex(_TEMP_HEX // 2)}.tmp"


def _writer_gone(pid: str | None, modified: float, now: float) -> bool:
    if now - modified > STALE_TEMP_SECONDS:
        return True
    if pid is None:
        return False  # a temporary file of an older memwell: only its age tells
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        return False  # alive, another user's
    return False


def sweep_stale_temps(directory: Path) -> list[str]:
    """Remove the temporary files killed writers left in ``directory``; return their names.

    Only names of the writer's own pattern (``.<name>.md.<pid>-<hex>.tmp``) are touched, and
    only when that process is gone or the file is older than :data:`STALE_TEMP_SECONDS`.
    """
    try:
        entries = list(os.scandir(directory))
    except FileNotFoundError:
        return []
    removed: list[str] = []
    now = time.time()
    for entry in entries:
        match = _TEMP_NAME.match(entry.name)
        if match is None or not entry.is_file(follow_symlinks=False):
            continue
        if _writer_gone(match["pid"], entry.stat(follow_symlinks=False).st_mtime, now):
            with contextlib.suppress(FileNotFoundError):
                os.unlink(entry.path)
                removed.append(entry.name)
                log.info("memwell: removed a killed writer's temporary file %s", entry.path)
    return removed


def _read_all(fd: int) -> bytes:
    chunks: list[bytes] = []
    offset = 0
    while chunk := os.pread(fd, 1 << 20, offset):
        chunks.append(chunk)
        offset += len(chunk)
    return b"".join(chunks)


def _open_current(name: str, dir_fd: int) -> int | None:
    try:
        return os.open(name, _READ_FLAGS, dir_fd=dir_fd)
    except FileNotFoundError:
        return None


def _only_appended(fd: int, previous: FileState) -> bool:
    """Whether the open file is the one ``previous`` read (same device and inode) and holds
    its bytes, unchanged or with more appended (those are carried over after the rename)."""
    if _identity(os.fstat(fd))[:2] != (previous.identity or ())[:2]:
        return False
    return _read_all(fd).startswith(previous.data)


def _wait_for_late_appends(fd: int) -> None:
    """Return once the file open as ``fd`` (just renamed away) has stopped growing for
    :data:`_SETTLE_S`, or after :data:`_SETTLE_MAX_S`: an editor that opened the old file just
    before the rename may still be about to write its line there (it was preempted between
    its ``open`` and its ``write``), and that line is carried over only if it lands first."""
    size = os.fstat(fd).st_size
    quiet_since = started = time.monotonic()
    while (now := time.monotonic()) - quiet_since < _SETTLE_S and now - started < _SETTLE_MAX_S:
        time.sleep(_SETTLE_POLL_S)
        grown = os.fstat(fd).st_size
        if grown != size:
            size, quiet_since = grown, time.monotonic()


def append_bytes(path: Path, data: bytes) -> None:
    """Append ``data`` to ``path`` in place (``O_APPEND``, so no other appender is overwritten)."""
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_NOFOLLOW)
    try:
        _write_all(fd, data)
    finally:
        os.close(fd)


def _write_all(fd: int, data: bytes) -> None:
    """Write all of ``data`` to ``fd`` and fsync it."""
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]
    os.fsync(fd)


def _write_temp(name: str, dir_fd: int, data: bytes, mode: int | None) -> None:
    fd = os.open(name, _TEMP_FLAGS, 0o666, dir_fd=dir_fd)
    try:
        if mode is not None:
            os.fchmod(fd, mode)
        _write_all(fd, data)
    finally:
        os.close(fd)


def _link_new(temp: str, name: str, dir_fd: int) -> None:
    """Put ``temp`` in place as ``name``, which must not exist (a hard link never replaces)."""
    try:
        os.link(temp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd, follow_symlinks=False)
    except FileExistsError:
        raise WriteRefusedError(f"{name} already exists", reason="exists") from None
    except OSError as exc:
        if exc.errno not in (errno.EPERM, errno.EOPNOTSUPP, errno.ENOTSUP):
            raise
        # A filesystem without hard links: check, then rename (a small window).
        if _open_current(name, dir_fd) is not None:
            raise WriteRefusedError(f"{name} already exists", reason="exists") from None
        os.rename(temp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)


def replace_file(path: Path, data: bytes, previous: FileState) -> bytes | None:
    """Atomically replace ``path`` with ``data`` if it is still as ``previous`` saw it.

    A new file gets the default mode (``0o666`` less the umask); an existing one keeps its
    permission bits.

    :returns: ``None``, or the bytes the replaced file held after the rename when another
        process wrote to it after ``previous`` was read (what it wrote is not in ``data``).
    :raises WriteRefusedError: ``reason="exists"`` when ``previous`` saw no file and one
        appeared, ``reason="busy"`` when the file was replaced or its bytes changed (other
        than by an append) since it was read.
    """
    dir_fd = os.open(path.parent, os.O_RDONLY | os.O_DIRECTORY)
    temp = temp_name(path.name)
    try:
        _write_temp(temp, dir_fd, data, previous.mode)
        if not previous.exists:
            _link_new(temp, path.name, dir_fd)
            os.fsync(dir_fd)
            return None
        old = _open_current(path.name, dir_fd)
        if old is None:
            raise WriteRefusedError(f"{path.name} changed while writing", reason="busy")
        try:
            if not _only_appended(old, previous):
                raise WriteRefusedError(f"{path.name} changed while writing", reason="busy")
            os.rename(temp, path.name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
            os.fsync(dir_fd)
            _wait_for_late_appends(old)
            late = _read_all(old)
        finally:
            os.close(old)
        return None if late == previous.data else late
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temp, dir_fd=dir_fd)
        os.close(dir_fd)


@contextlib.contextmanager
def write_lock(lock_file: Path, timeout: float) -> Iterator[None]:
    """Hold the exclusive cross-process lock ``lock_file`` (created if missing).

    :raises WriteRefusedError: ``reason="busy"`` if it is not acquired within ``timeout`` s.
    """
    lock_file.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(lock_file, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o644)
    try:
        deadline = time.monotonic() + timeout
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    raise WriteRefusedError(
                        f"another memory write held the lock for more than {timeout:g} s",
                        reason="busy",
                    ) from None
                time.sleep(_LOCK_POLL_S)
        yield
    finally:
        os.close(fd)  # closing the descriptor releases the lock
