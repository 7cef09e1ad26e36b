"""Crash-safe file replacement and the cross-process write lock.

:func:`replace_file` writes a temporary file in the target's directory, fsyncs it, renames
it over the target and fsyncs the directory, so a reader or a crash sees the old bytes or the
new ones, never a mix. It refuses to replace a file that changed since it was read (another
editor saved it), so the caller can read again and redo its edit. :func:`write_lock` is an
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

from memwell.errors import PathNotAllowedError, WriteRefusedError

_READ_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK
_TEMP_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW
_LOCK_POLL_S = 0.01


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


def _current_identity(name: str, dir_fd: int) -> tuple[int, int, int, int] | None:
    try:
        return _identity(os.stat(name, dir_fd=dir_fd, follow_symlinks=False))
    except FileNotFoundError:
        return None


def replace_file(path: Path, data: bytes, previous: FileState) -> None:
    """Atomically replace ``path`` with ``data`` if it is still as ``previous`` saw it.

    A new file gets the default mode (``0o666`` less the umask); an existing one keeps its
    permission bits.

    :raises WriteRefusedError: ``reason="exists"`` when ``previous`` saw no file and one
        appeared, ``reason="busy"`` when the file changed since it was read.
    """
    dir_fd = os.open(path.parent, os.O_RDONLY | os.O_DIRECTORY)
    temp = f".{path.name}.{secrets.token_hex(6)}.tmp"
    try:
        fd = os.open(temp, _TEMP_FLAGS, 0o666, dir_fd=dir_fd)
        try:
            if previous.mode is not None:
                os.fchmod(fd, previous.mode)
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
            os.fsync(fd)
        finally:
            os.close(fd)
        current = _current_identity(path.name, dir_fd)
        if current != previous.identity:
            if previous.identity is None:
                raise WriteRefusedError(f"{path.name} already exists", reason="exists")
            raise WriteRefusedError(f"{path.name} changed while writing", reason="busy")
        os.rename(temp, path.name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
        os.fsync(dir_fd)
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
