"""Indexing progress on stderr: files, chunks, chunks/s and an ETA, updated per batch."""

from __future__ import annotations

import sys
import time
from types import TracebackType
from typing import TYPE_CHECKING, TextIO

if TYPE_CHECKING:
    from memwell.contract.models import SyncProgress


def progress_text(label: str, p: SyncProgress, elapsed: float) -> str:
    """``label: 40/61 files, 120/180 chunks, 12.5 chunks/s, ETA 5 s`` (parts known so far)."""
    parts = [f"{p.completed}/{p.total} files"]
    if p.total_chunks:
        parts.append(f"{p.chunks}/{p.total_chunks} chunks")
        if elapsed > 0 and p.chunks:
            rate = p.chunks / elapsed
            parts.append(f"{rate:.1f} chunks/s")
            if p.chunks < p.total_chunks:
                parts.append(f"ETA {(p.total_chunks - p.chunks) / rate:.0f} s")
    return f"{label}: {', '.join(parts)}"


LOG_INTERVAL_S = 2.0
"""Off a terminal (a log file), a progress line at most this often, plus the last one."""


class ProgressLine:
    """A progress callback that draws one line per batch (redrawn in place on a terminal).

    Nothing is printed for a sync with nothing to do; the line starts with the first batch
    of files indexed, so a search that must index first says so.
    """

    def __init__(self, label: str, stream: TextIO | None = None) -> None:
        self.label = label
        self.stream = stream or sys.stderr
        self.tty = self.stream.isatty()
        self.started = time.monotonic()
        self.written_at: float | None = None
        self.last = ""

    def __call__(self, p: SyncProgress) -> None:
        if p.total == 0:
            return
        now = time.monotonic()
        done = p.completed >= p.total
        if self.tty or done or self.written_at is None or now - self.written_at >= LOG_INTERVAL_S:
            self.written_at = now
            self._write(progress_text(self.label, p, now - self.started))

    def _write(self, text: str) -> None:
        if self.tty:
            pad = " " * max(0, len(self.last) - len(text))
            self.stream.write(f"\r{text}{pad}")
        else:
            self.stream.write(f"{text}\n")
        self.stream.flush()
        self.last = text

    def __enter__(self) -> ProgressLine:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self.tty and self.last:
            self.stream.write("\n")
            self.stream.flush()
