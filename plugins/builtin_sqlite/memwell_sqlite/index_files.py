"""The published index as the manager reads it and, when SQLite finds it damaged, repairs it.

This is the one place where an error on an index file is judged (see :mod:`.faults`):

- opening: the header check, confirmed by SQLite through the WAL (:func:`index_problem`),
  and corruption errors while opening, make a file *damaged*; anything else is raised;
- reading (``status``, searches) only *notes* damage: nothing is renamed or deleted;
- a sync, holding the write lock, quarantines a damaged file (:meth:`IndexDir.quarantine`
  keeps one copy, its WAL with it) and a full rebuild follows.

An index directory that cannot be written, or a disk too full for SQLite's shared-memory
file, is opened read-only and :meth:`PublishedIndex.notes` says so.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from memwell.plugin import MemwellSettings
from memwell.plugin_sdk import lazy_logger

from .faults import Fault, classify
from .integrity import index_problem
from .layout import IndexDir
from .store import IndexStore

log = lazy_logger(__name__)

#: Below this much free space an I/O error while writing the index is reported as a full disk.
LOW_SPACE_BYTES = 1 << 20
#: An opened index file and its metadata.
Opened = tuple[IndexStore, dict[str, Any] | None]


class PublishedIndex:
    """The reader of a workspace's published generation, and the damage found in it."""

    def __init__(
        self,
        index_dir: IndexDir,
        settings: MemwellSettings,
        *,
        on_damage: Callable[[], None],
        on_reader_closed: Callable[[], None],
    ) -> None:
        self.index_dir = index_dir
        self.settings = settings
        self.on_damage = on_damage
        self.on_reader_closed = on_reader_closed
        self.lock = threading.RLock()
        self.reader: IndexStore | None = None
        self.reader_meta: dict[str, Any] | None = None
        #: Damage a reader found in a published file, left for the next sync to repair.
        self.damage: tuple[Path, str] | None = None
        #: Why the published index was opened read-only, if it was.
        self.access_reason: str | None = None
        #: The damaged files this process quarantined (shown by status).
        self.recovered: list[str] = []

    # -- opening ----------------------------------------------------------------------------

    def open_store(self, path: Path, *, read_only: bool = False) -> IndexStore:
        vector = self.settings.store.vector
        return IndexStore(
            path,
            tokenizer=self.settings.store.fts.tokenizer,
            vector_enabled=vector.enabled,
            extension_path=vector.extension_path,
            read_only=read_only,
        )

    def _open_with_meta(self, path: Path, *, read_only: bool) -> Opened:
        store = self.open_store(path, read_only=read_only)
        try:
            return store, store.read_meta()
        except BaseException:
            store.close()
            raise

    def open_checked(self, path: Path, *, for_writing: bool = False) -> Opened | str:
        """Open a published file and read its metadata, or say why it is damaged.

        Damage is what SQLite sees, the WAL included; every other error (locked, out of
        space, read-only, a provider failure) is raised: it is not the file's fault. For
        reading, a directory that cannot be written, or a disk too full to open the file
        for writing, gets a read-only connection.
        """
        problem = index_problem(path)
        if problem is not None:
            return problem
        writable = for_writing or self.index_dir.writable()
        try:
            opened = self._open_with_meta(path, read_only=not writable)
        except Exception as exc:
            if classify(exc) is Fault.CORRUPT:
                return f"{type(exc).__name__}: {exc}"
            if for_writing or not writable or not self.out_of_space(exc):
                raise
            try:
                opened = self._open_with_meta(path, read_only=True)
            except Exception:
                raise exc from None
            self.access_reason = f"opening it for writing failed: {type(exc).__name__}: {exc}"
            return opened
        self.access_reason = None if writable else "the index directory is read-only"
        return opened

    def out_of_space(self, exc: BaseException) -> bool:
        """Whether an index write failed for lack of disk space (SQLite may report a full
        disk as an I/O error, e.g. when its shared-memory file cannot grow)."""
        fault = classify(exc)
        if fault is Fault.TRANSIENT:
            try:
                import shutil  # only on a failed write: its import costs a search 3 ms

                return shutil.disk_usage(self.index_dir.root).free < LOW_SPACE_BYTES
            except OSError:
                return False
        return fault is Fault.FULL

    # -- reading ----------------------------------------------------------------------------

    def close_reader(self) -> None:
        """Drop the reader's connection (hold :attr:`lock`)."""
        if self.reader is not None:
            self.reader.close()
            self.reader = None
            self.reader_meta = None
            self.on_reader_closed()

    def reader_store(self) -> IndexStore | None:
        """The store of the published generation, reopened when it changes (hold
        :attr:`lock`); ``None`` before the first index or while it is damaged.

        A writer may publish a new generation and delete the old one at any moment, so an
        open is retried when the pointer moved while the file was being opened; only a file
        that is still the published one can be taken for damaged.
        """
        for _ in range(5):
            current = self.index_dir.current(cached=True)
            if self.reader is not None and current == self.reader.path:
                return self.reader
            self.close_reader()
            if current is None:
                return None
            try:
                opened = self.open_checked(current)
            except Exception:
                if self.index_dir.current() != current:
                    continue
                raise
            if self.index_dir.current() != current:  # switched while opening: try again
                if not isinstance(opened, str):
                    opened[0].close()
                continue
            if isinstance(opened, str):
                self._note_damage(current, opened)
                return None
            self.reader, self.reader_meta = opened
            return self.reader
        return None

    def _note_damage(self, path: Path, problem: str) -> None:
        if self.damage is None or self.damage[0] != path:
            log.warning(
                "memwell: index %s is damaged (%s); the next sync rebuilds it", path, problem
            )
        self.damage = (path, problem)
        self.on_damage()

    def query_failed(self, exc: Exception) -> None:
        """Judge an error a query on the reader raised (hold :attr:`lock`): corruption is
        noted for the next sync and the reader dropped; anything else is re-raised."""
        reader = self.reader
        if classify(exc) is not Fault.CORRUPT or reader is None or reader.access != "read-write":
            raise exc  # a read-only view cannot tell damage from a WAL it did not read
        self._note_damage(reader.path, f"{type(exc).__name__}: {exc}")
        self.close_reader()

    def notes(self, store: IndexStore | None) -> list[str]:
        """What the user must know about the index files: read-only access, damage found."""
        notes: list[str] = []
        if store is not None and store.access != "read-write":
            notes.append(
                f"index opened {store.access} ({self.access_reason}): searching the "
                f"existing index in {self.index_dir.root}; it cannot be written or synced"
            )
        if self.damage is not None:
            path, problem = self.damage
            notes.append(f"{path.name} is damaged ({problem}); the next sync rebuilds it")
        return notes

    # -- repairing (hold the write lock) ------------------------------------------------------

    def open_for_sync(self) -> tuple[Path, IndexStore, dict[str, Any] | None] | None:
        """The published file, its store and metadata for a sync; a damaged file is
        quarantined first, so ``None`` means a full build is due."""
        self.index_dir.cleanup()  # generations left by a writer that crashed
        self.index_dir.forget_missing()
        current = self.index_dir.current()
        if current is None:
            return None
        known = self.damage
        if known is not None and known[0] == current:
            opened: Opened | str = known[1]
        else:
            opened = self.open_checked(current, for_writing=True)
        if isinstance(opened, str):
            self.quarantine(current, opened)
            return None
        return current, *opened

    def quarantine(self, path: Path, problem: str) -> None:
        """Move a damaged published file aside; the caller rebuilds."""
        log.warning("memwell: index %s is damaged (%s); rebuilding from Markdown", path, problem)
        self.recovered.append(f"{path.name}: {problem}")
        self.index_dir.quarantine(path)
        self.damage = None
