"""Debounced file watching (watchdog): marks the index dirty and schedules a sync."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path, PurePath
from typing import Any

from memwell.plugin import Debouncer, layout_name
from memwell.plugin_sdk import lazy_logger
from watchdog.events import FileSystemEvent, FileSystemEventHandler
from watchdog.observers import Observer

log = lazy_logger(__name__)

IGNORED_SEGMENTS = frozenset(
    {".git", "node_modules", ".pnpm-store", ".venv", "venv", ".tox", "__pycache__", ".memwell"}
)

#: Events of a file written in place; for a session transcript they go to the delta tracker.
WRITES = frozenset({"created", "modified", "closed"})


def is_relevant(path: str, suffixes: tuple[str, ...]) -> bool:
    """Whether a changed path can affect the index."""
    parts = PurePath(path).parts
    if any(part in IGNORED_SEGMENTS for part in parts):
        return False
    return path.endswith(suffixes) or ".jsonl." in path


class _Handler(FileSystemEventHandler):
    def __init__(self, watcher: MemoryWatcher) -> None:
        self.watcher = watcher

    def on_any_event(self, event: FileSystemEvent) -> None:
        if event.event_type in ("opened", "closed_no_write"):
            return
        if event.is_directory and event.event_type == "modified":
            return  # echoes a change of one of its entries, which has an event of its own
        for raw in (event.src_path, getattr(event, "dest_path", "")):
            path = raw.decode() if isinstance(raw, bytes) else raw
            if not path or self.watcher.ignores(Path(path)):
                continue
            # A writer's append is followed by its close (``closed`` on Linux): both belong
            # to the session-delta tracker, or every message is indexed at once.
            if event.event_type in WRITES and self.watcher.grew(Path(path)):
                return
            if event.is_directory and event.event_type == "created":
                self.watcher.on_directory_created(Path(path))
            if event.is_directory or is_relevant(path, (".md", ".jsonl")):
                self.watcher.touch()
                return


class MemoryWatcher:
    """Watches the memory roots; calls ``on_change`` once edits settle for ``debounce_s``.

    With ``transcripts``, writes to transcripts in that sessions directory go to its callback
    instead (the session-delta tracker decides when they are synced).
    """

    def __init__(
        self,
        workspace: Path,
        roots: Iterable[Path],
        on_dirty: Callable[[], None],
        on_change: Callable[[], None],
        debounce_s: float,
        ignore: Iterable[Path] = (),
        transcripts: tuple[Path, Callable[[Path], None]] | None = None,
    ) -> None:
        self.workspace = workspace
        self.roots = [r for r in roots if r.is_dir()]
        #: Directories whose events never count (the index directory: its own writes).
        self.ignored = [p.resolve() for p in ignore]
        self.on_dirty = on_dirty
        self.on_change = on_change
        self.debounce_s = debounce_s
        #: The sessions directory and what a transcript's growth goes to (session deltas).
        self.transcripts = transcripts
        self._observer: Any = None
        self._debounce = Debouncer(debounce_s, self._fire)
        self._watched: set[Path] = set()

    def start(self) -> None:
        observer = Observer()
        observer.daemon = True
        handler = _Handler(self)
        observer.schedule(handler, str(self.workspace), recursive=False)
        for root in self.roots:
            if root != self.workspace:
                observer.schedule(handler, str(root), recursive=True)
                self._watched.add(root)
        self._handler = handler
        observer.start()
        self._observer = observer

    def ignores(self, path: Path) -> bool:
        """Whether ``path`` is one of the ignored directories or inside one."""
        resolved = path.resolve()
        return any(resolved == d or d in resolved.parents for d in self.ignored)

    def grew(self, path: Path) -> bool:
        """Hand a written session transcript to the session-delta tracker, if there is one."""
        if self.transcripts is None or not path.name.endswith(".jsonl"):
            return False
        root, on_growth = self.transcripts
        try:  # the reference layout: <file> or <sessionKey>/transcripts/<file> under root
            relative = path.parent.resolve().relative_to(root) / path.name
        except ValueError:
            return False
        if layout_name(relative.as_posix()) is None:
            return False
        on_growth(path)
        return True

    def on_directory_created(self, path: Path) -> None:
        """Start watching ``memory/`` if it appears after the watcher started."""
        if path.parent == self.workspace and path.name == "memory" and path not in self._watched:
            self._watched.add(path)
            try:
                self._observer.schedule(self._handler, str(path), recursive=True)
            except Exception as exc:
                log.warning("cannot watch %s: %s", path, exc)

    def touch(self) -> None:
        self.on_dirty()
        self._debounce.touch()

    def _fire(self) -> None:
        try:
            self.on_change()
        except Exception as exc:  # a watch-triggered failure is logged, never raised
            log.warning("memwell watch sync failed: %s", exc)

    def stop(self) -> None:
        self._debounce.cancel()
        if self._observer is not None:
            self._observer.stop()
            self._observer.join(timeout=5)
            self._observer = None
