"""Session deltas: transcript growth per file, and the sessions-only sync it triggers.

The port of the reference's session-delta trigger (``[sync.sessions]``). For each updated
transcript the tracker adds the bytes appended since it last looked to the file's pending
bytes, and the newlines in them (one JSONL line per message) to its pending messages; newlines
are only counted while ``delta_messages > 0`` and the byte threshold is not reached yet. A
transcript that shrank was rewritten: the whole file counts. A file is *hit* once pending bytes
reach ``delta_bytes`` or pending messages reach ``delta_messages`` (a threshold of 0 means any
growth); a hit subtracts the thresholds (the remainder carries over) and asks for one
``sync(reason="session-delta")``, which the builtin backend runs over session transcripts only
(:data:`SESSIONS_ONLY_REASONS`; other backends run their ordinary incremental sync). After a
sync, :meth:`SessionDeltaTracker.synced` resets the counters to the files' current sizes.

After a host compacts a conversation, :func:`after_compaction` forces a sessions-only sync
(``reason="post-compaction"``) when ``post_compaction_force`` is on and sessions are indexed.

Example::

    deltas = SessionDeltaTracker(settings, sync=lambda reason: memory.sync(reason=reason))
    deltas.transcripts_updated([Path("sessions/main.jsonl")])  # after appending messages
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable
from pathlib import Path

import msgspec

from memwell.contract.config import MemwellSettings
from memwell.contract.manager import MemorySearchManager
from memwell.util.debounce import Debouncer
from memwell.util.lazy_import import lazy_logger

log = lazy_logger(__name__)

SESSION_DELTA_REASON = "session-delta"
POST_COMPACTION_REASON = "post-compaction"
#: Sync reasons a backend may serve by scanning session transcripts only.
SESSIONS_ONLY_REASONS = frozenset({SESSION_DELTA_REASON, POST_COMPACTION_REASON})
#: Updates that arrive within this many seconds are processed as one batch (the reference's).
DEBOUNCE_SECONDS = 5.0
_READ_CHUNK = 64 * 1024


class FileDelta(msgspec.Struct):
    """What the tracker knows of one transcript."""

    last_size: int = 0
    pending_bytes: int = 0
    pending_messages: int = 0


def _count_newlines(path: Path, start: int, end: int) -> int:
    count = 0
    with path.open("rb") as handle:
        handle.seek(start)
        remaining = end - start
        while remaining > 0:
            block = handle.read(min(_READ_CHUNK, remaining))
            if not block:
                break
            count += block.count(b"\n")
            remaining -= len(block)
    return count


def _reached(pending: int, threshold: int) -> bool:
    return pending > 0 if threshold <= 0 else pending >= threshold


class SessionDeltaTracker:
    """Accumulates transcript growth and calls ``sync(reason)`` when a file is hit.

    :param settings: ``[sync.sessions]`` gives the thresholds.
    :param sync: runs the sync (the builtin backend passes a background sync).
    :param debounce_s: the batching window of :meth:`schedule` (:data:`DEBOUNCE_SECONDS`).
    """

    def __init__(
        self,
        settings: MemwellSettings,
        *,
        sync: Callable[[str], None],
        debounce_s: float | None = None,
    ) -> None:
        self.config = settings.sync.sessions
        self._sync = sync
        self.files: dict[Path, FileDelta] = {}
        self._lock = threading.Lock()
        self._batch: set[Path] = set()
        delay = DEBOUNCE_SECONDS if debounce_s is None else debounce_s
        self._debounce = Debouncer(delay, self._fire)

    def transcripts_updated(self, paths: Iterable[Path]) -> list[Path]:
        """Account for the growth of ``paths``; sync once if any was hit. Returns the hits."""
        with self._lock:
            hits = [path for path in dict.fromkeys(paths) if self._grow(path)]
        if hits:
            self._sync(SESSION_DELTA_REASON)
        return hits

    def _grow(self, path: Path) -> bool:
        try:
            size = path.stat().st_size
        except OSError:
            self.files.pop(path, None)
            return False
        state = self.files.setdefault(path, FileDelta())
        delta_bytes, delta_messages = self.config.delta_bytes, self.config.delta_messages
        if size < state.last_size:  # rewritten: the whole file is new
            state.last_size = 0
        start, state.last_size = state.last_size, size
        state.pending_bytes += size - start
        counting = delta_messages > 0 and (delta_bytes <= 0 or state.pending_bytes < delta_bytes)
        if counting and size > start:
            state.pending_messages += _count_newlines(path, start, size)
        bytes_hit = _reached(state.pending_bytes, delta_bytes)
        if not (bytes_hit or _reached(state.pending_messages, delta_messages)):
            return False
        state.pending_bytes = max(0, state.pending_bytes - delta_bytes) if delta_bytes > 0 else 0
        state.pending_messages = (
            max(0, state.pending_messages - delta_messages) if delta_messages > 0 else 0
        )
        return True

    def schedule(self, path: Path) -> None:
        """Add ``path`` to the batch processed ``debounce_s`` after the last update."""
        with self._lock:
            self._batch.add(path)
        self._debounce.touch()

    def _fire(self) -> None:
        with self._lock:
            batch, self._batch = list(self._batch), set()
        try:
            self.transcripts_updated(batch)
        except Exception as exc:  # a background trigger logs, never raises
            log.warning("memwell: session-delta sync failed: %s", exc)

    def synced(self, transcripts: Iterable[Path]) -> None:
        """A sync indexed ``transcripts`` (every transcript there is): their counters restart
        from their current sizes, and files no longer there are forgotten."""
        with self._lock:
            files: dict[Path, FileDelta] = {}
            for path in transcripts:
                try:
                    files[path] = FileDelta(last_size=path.stat().st_size)
                except OSError:
                    continue
            self.files = files

    def close(self) -> None:
        """Cancel a pending batch."""
        self._debounce.cancel()


def after_compaction(memory: MemorySearchManager, settings: MemwellSettings) -> bool:
    """Tell memory a conversation was compacted: a sessions-only sync runs now when
    ``[sync.sessions] post_compaction_force`` is on and sessions are indexed. Returns whether
    it ran."""
    if not settings.sync.sessions.post_compaction_force or "sessions" not in settings.sources:
        return False
    memory.sync(reason=POST_COMPACTION_REASON)
    return True
