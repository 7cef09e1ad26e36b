"""Index files on disk: generations behind an atomically replaced ``CURRENT`` pointer.

A full reindex builds a new generation file and then replaces ``CURRENT`` with ``os.replace``,
so a crash at any moment leaves a pointer to a complete index: the old one or the new one.
Writers (in any process) serialise on ``write.lock``.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

POINTER = "CURRENT"
LOCK = "write.lock"
PREFIX = "index-"
SUFFIX = ".sqlite"
QUARANTINE = ".corrupt-"
_SIDECARS = ("", "-wal", "-shm", "-journal")


class IndexDir:
    """The directory holding a workspace's index generations."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self._last_read: tuple[tuple[int, int, int, int], str | None] | None = None

    def _pointer(self, *, cached: bool = False) -> str | None:
        """The generation ``CURRENT`` names. ``cached``: the name read last, unless the file's
        inode, size or times moved since (:meth:`publish` replaces the file, so every publish
        moves them); a stat instead of an open and a read for every search."""
        pointer = self.root / POINTER
        try:
            st = os.stat(pointer)
        except OSError:
            return None
        stamp = (st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)
        if cached and self._last_read is not None and self._last_read[0] == stamp:
            return self._last_read[1]
        try:
            name: str | None = pointer.read_text(encoding="utf-8").strip()
        except OSError:
            return None
        if not name or not name.startswith(PREFIX) or "/" in name or not name.endswith(SUFFIX):
            name = None
        self._last_read = (stamp, name)
        return name

    def current(self, *, cached: bool = False) -> Path | None:
        """The published generation, or ``None`` before the first index.

        A writer may publish and delete the generation just read from the pointer, so a
        missing file is only believed once the pointer reads the same twice. ``cached`` lets
        the first read come from :meth:`_pointer`'s cache (readers; writers read afresh).
        """
        name = self._pointer(cached=cached)
        for _ in range(5):
            if name is None:
                return None
            path = self.root / name
            if path.is_file():
                return path
            again = self._pointer()
            if again == name:
                return None
            name = again
        return None

    def new_generation(self) -> Path:
        self.root.mkdir(parents=True, exist_ok=True)
        stamp = time.strftime("%Y%m%dT%H%M%S")
        return self.root / f"{PREFIX}{stamp}-{uuid.uuid4().hex[:8]}{SUFFIX}"

    def publish(self, path: Path) -> None:
        """Atomically point ``CURRENT`` at ``path`` (durable across power loss)."""
        tmp = self.root / f"{POINTER}.{uuid.uuid4().hex[:8]}.tmp"
        with tmp.open("w", encoding="utf-8") as fh:
            fh.write(path.name + "\n")
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, self.root / POINTER)
        fd = os.open(self.root, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)

    def discard(self, path: Path) -> None:
        """Delete a generation and its SQLite side files."""
        for suffix in _SIDECARS:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(f"{path}{suffix}")

    def writable(self) -> bool:
        """Whether index files can be written here (false on a read-only copy or mount)."""
        probe = self.root if self.root.is_dir() else self.root.parent
        try:
            if os.statvfs(probe).f_flag & os.ST_RDONLY:
                return False
        except OSError:
            return False
        return os.access(probe, os.W_OK)

    def quarantine(self, path: Path) -> Path:
        """Move a damaged generation aside, its WAL with it, and keep only this one copy
        (call while holding the lock).

        Older quarantined copies are deleted, so repeated damage never fills the disk. A
        pointer naming ``path`` is removed: until a rebuild publishes, there is no index.
        Returns the quarantined path.
        """
        if self._pointer() == path.name:
            (self.root / POINTER).unlink()
        target = path.with_name(f"{path.name}{QUARANTINE}{int(time.time() * 1000)}")
        for old in self.root.glob(f"{PREFIX}*{QUARANTINE}*"):
            with contextlib.suppress(FileNotFoundError):
                old.unlink()
        for suffix in _SIDECARS:
            with contextlib.suppress(FileNotFoundError):
                os.rename(f"{path}{suffix}", f"{target}{suffix}")
        return target

    def forget_missing(self) -> None:
        """Remove a pointer naming a file that is gone (call while holding the lock)."""
        if self._pointer() is not None and self.current() is None:
            with contextlib.suppress(FileNotFoundError):
                (self.root / POINTER).unlink()

    def cleanup(self) -> list[Path]:
        """Delete every generation except the current one (call while holding the lock).

        Also removes side files left without their database (a writer killed mid-discard).
        """
        keep = self.current()
        removed: list[Path] = []
        for path in self.root.glob(f"{PREFIX}*{SUFFIX}"):
            if path != keep:
                self.discard(path)
                removed.append(path)
        for suffix in _SIDECARS[1:]:
            for side in self.root.glob(f"{PREFIX}*{SUFFIX}{suffix}"):
                if keep is None or side.name != f"{keep.name}{suffix}":
                    with contextlib.suppress(FileNotFoundError):
                        side.unlink()
        for tmp in self.root.glob(f"{POINTER}.*.tmp"):
            with contextlib.suppress(FileNotFoundError):
                tmp.unlink()
        return removed

    @contextlib.contextmanager
    def write_lock(self, timeout: float = 600.0) -> Iterator[None]:
        """Exclusive writer lock across threads and processes."""
        self.root.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.root / LOCK, os.O_RDWR | os.O_CREAT, 0o644)
        deadline = time.monotonic() + timeout
        try:
            while True:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except BlockingIOError as exc:
                    if time.monotonic() > deadline:
                        msg = f"index {self.root} is locked by another writer"
                        raise TimeoutError(msg) from exc
                    time.sleep(0.05)
            yield
        finally:
            os.close(fd)
