""":class:`MemoryWriter`: the one write path to Markdown memory, for every backend.

Each operation redacts secrets from the text, checks the size limit and the write rules
(:mod:`memwell.writing.targets`), edits the file under the cross-process lock with an atomic
replace (:mod:`memwell.writing.atomic`), then syncs the manager so the next search finds the
new text. Nothing is written when a check fails: a :class:`~memwell.errors.WriteRefusedError`
or :class:`~memwell.errors.PathNotAllowedError` says why.

Example::

    from memwell import open_memory, writer

    memory = open_memory("~/agent")
    notes = writer(memory)
    notes.append("Decided: deploys go out on Tuesdays.")  # memory/YYYY-MM-DD.md
    notes.append("Prefers tabs over spaces.", heading="Preferences")  # MEMORY.md section
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from datetime import datetime
from pathlib import Path

from memwell.config import MemwellSettings, load_settings
from memwell.errors import WriteRefusedError
from memwell.lazy_import import lazy_logger
from memwell.manager import MemorySearchManager
from memwell.sources.discovery import MEMORY_DIR, ROOT_MEMORY_FILES
from memwell.sources.redact import redact

from . import edits
from .atomic import (
    FileState,
    append_bytes,
    read_state,
    replace_file,
    sweep_stale_temps,
    write_lock,
)
from .merge import union_merge
from .names import unsafe_character
from .recent import recent_files
from .results import Operation, RecentFile, WriteResult
from .targets import DAILY_FORMAT, ensure_parent, resolve_write_path, target_path

log = lazy_logger(__name__)

LOCK_FILE_NAME = "memory-write.lock"
"""The lock file, in the workspace's index directory."""

Edit = Callable[[str, bool], tuple[edits.Edit, bool]]
"""An edit of the file's text; gets whether the file exists, returns the edit and whether
it created a heading."""


class MemoryWriter:
    """Writes the Markdown memory of ``workspace`` and keeps ``manager``'s index current.

    :param manager: the workspace's memory; synced after every write.
    :param workspace: the workspace directory.
    :param settings: the workspace's settings (``[write]`` and ``index_dir`` are used).
    :param clock: the local time, for the daily file's date (default: now).
    """

    def __init__(
        self,
        manager: MemorySearchManager,
        workspace: str | os.PathLike[str],
        settings: MemwellSettings | None = None,
        *,
        clock: Callable[[], datetime] | None = None,
    ) -> None:
        self.manager = manager
        self.workspace = Path(os.path.realpath(workspace))
        self.settings = settings if settings is not None else MemwellSettings()
        self._clock = clock or (lambda: datetime.now().astimezone())

    @property
    def enabled(self) -> bool:
        """False when ``[write] enabled = false``: every write is refused."""
        return self.settings.write.enabled

    @property
    def lock_file(self) -> Path:
        return self.workspace / self.settings.index_dir / LOCK_FILE_NAME

    def daily_path(self) -> str:
        """Today's daily file, ``memory/YYYY-MM-DD.md`` (local date)."""
        return f"{MEMORY_DIR}/{self._clock().strftime(DAILY_FORMAT)}.md"

    def append(
        self, text: str, *, file: str | None = None, heading: str | None = None
    ) -> WriteResult:
        """Append ``text`` as a paragraph; create the file (and the heading) when missing.

        Without ``file`` the target is today's daily file, or ``MEMORY.md`` when ``heading``
        is given. ``file`` is a memory path or a topic name under ``memory/``. With
        ``heading``, the note goes at the end of that section. A new file under ``memory/``
        starts with a ``# <name>`` title (``# YYYY-MM-DD`` for the daily file).
        """
        note = self._checked_text(text, "text")
        title = _checked_heading(heading) if heading is not None else None
        redacted = note != text or title != heading
        if file is not None:
            target = target_path(file)
        elif title is not None:
            target = self.root_file()
        else:
            target = self.daily_path()

        def edit(current: str, exists: bool) -> tuple[edits.Edit, bool]:
            if not exists and target.startswith(f"{MEMORY_DIR}/"):
                current = f"# {Path(target).stem}\n"
            if title is None:
                return edits.append(current, note), False
            return edits.append_under_heading(current, title, note)

        return self._write("append", target, note, edit, redacted)

    def create(self, rel_path: str, text: str) -> WriteResult:
        """Create a new memory file holding ``text``; refused if the file exists."""
        body = self._checked_text(text, "text")

        def edit(current: str, exists: bool) -> tuple[edits.Edit, bool]:
            if exists:
                raise WriteRefusedError(
                    f"{target} already exists; append to it or replace a passage instead",
                    reason="exists",
                )
            return edits.append("", body), False

        target = target_path(rel_path)
        return self._write("create", target, body, edit, body != text)

    def replace(self, rel_path: str, old: str, new: str) -> WriteResult:
        """Replace the one occurrence of ``old`` in an existing file with ``new``.

        Refused unless ``old`` occurs exactly once. ``new`` may be empty (a deletion).
        """
        replacement = self._checked_text(new, "new", allow_blank=True)
        target = target_path(rel_path)

        def edit(current: str, exists: bool) -> tuple[edits.Edit, bool]:
            if not exists:
                raise WriteRefusedError(f"{target} does not exist", reason="not_found")
            return edits.replace_once(current, old, replacement), False

        return self._write("replace", target, replacement, edit, replacement != new)

    def recent(self, limit: int = 10) -> list[RecentFile]:
        """The ``limit`` most recently changed memory files, newest first."""
        return recent_files(self.workspace, limit, self.settings.extra_paths)

    def root_file(self) -> str:
        """``MEMORY.md``, or ``memory.md`` when only that one exists."""
        upper, lower = ROOT_MEMORY_FILES
        if not (self.workspace / upper).exists() and (self.workspace / lower).is_file():
            return lower
        return upper

    def _checked_text(self, text: str, name: str, *, allow_blank: bool = False) -> str:
        if not self.enabled:
            raise WriteRefusedError(
                "memory writing is disabled ([write] enabled = false)", reason="disabled"
            )
        if not isinstance(text, str):
            raise WriteRefusedError(f"{name} must be a string", reason="invalid")
        try:
            size = len(text.encode("utf-8"))
        except UnicodeEncodeError as exc:
            message = f"{name} is not valid Unicode: {exc}"
            raise WriteRefusedError(message, reason="invalid") from None
        if "\x00" in text:
            raise WriteRefusedError(f"{name} contains a NUL character", reason="invalid")
        limit = self.settings.write.max_bytes
        if size > limit:
            raise WriteRefusedError(
                f"{name} is {size} bytes; the limit per write is {limit} ([write] max_bytes)",
                reason="too_large",
            )
        if not allow_blank and not text.strip():
            raise WriteRefusedError(f"{name} is blank; nothing to write", reason="blank")
        return redact(text)

    def _write(
        self, operation: Operation, target: str, written: str, edit: Edit, redacted: bool
    ) -> WriteResult:
        real, display = resolve_write_path(self.workspace, target)
        timeout = self.settings.write.lock_timeout_seconds
        with write_lock(self.lock_file, timeout):
            sweep_stale_temps(real.parent)
            state, change, heading_created, data = self._replaced(real, display, edit, timeout)
        indexed, index_error = self._sync()
        return WriteResult(
            path=display,
            operation=operation,
            start_line=change.start_line,
            end_line=change.end_line,
            bytes_written=len(written.encode("utf-8")),
            file_bytes=len(data),
            created=not state.exists,
            heading_created=heading_created,
            redacted=redacted,
            indexed=indexed,
            index_error=index_error,
        )

    def _replaced(
        self, real: Path, display: str, edit: Edit, timeout: float
    ) -> tuple[FileState, edits.Edit, bool, bytes]:
        """Apply ``edit`` to the file, again on what another editor wrote meanwhile.

        A file replaced or rewritten before the rename is read again and edited anew (until
        ``timeout`` s have passed). Bytes another process wrote to the replaced file after it
        was read are carried over: appended bytes are appended to the new file, any other
        change is merged into it (:func:`~.merge.union_merge`), so neither side's lines are
        lost. Returns the file as first read, the edit, whether it created the heading and
        the bytes written.
        """
        deadline = time.monotonic() + timeout
        first = state = read_state(real)
        change, heading_created = edit(_text(state.data), state.exists)
        data = _bytes(change.text)
        while True:
            if not state.exists:
                ensure_parent(self.workspace, real, display)
            try:
                late = replace_file(real, data, state)
            except WriteRefusedError as exc:
                if exc.reason != "busy" or time.monotonic() > deadline:
                    raise
                first = state = read_state(real)
                change, heading_created = edit(_text(state.data), state.exists)
                data = _bytes(change.text)
                continue
            if late is None:
                return first, change, heading_created, data
            log.info("memwell: %s changed during the write; keeping its new lines", display)
            if late.startswith(state.data):
                append_bytes(real, late[len(state.data) :])
                return first, change, heading_created, data
            current = read_state(real)
            change, heading_created = edit(_text(late), True)
            rebased = _bytes(change.text)
            data = rebased if current.data == data else union_merge(data, current.data, rebased)
            state = current

    def _sync(self) -> tuple[bool, str | None]:
        try:
            self.manager.sync(reason="write")
        except Exception as exc:
            error = f"{type(exc).__name__}: {exc}"
            log.warning("memwell: written, but the index sync failed: %s", error)
            return False, error
        return True, None


def _checked_heading(heading: str) -> str:
    """``heading`` redacted; refused when it holds a character that could break its line."""
    if not isinstance(heading, str):
        raise WriteRefusedError("heading must be a string", reason="invalid")
    unsafe = unsafe_character(heading)
    if unsafe is not None:
        raise WriteRefusedError(
            f"heading contains {unsafe}; a heading is one line without control or "
            "bidirectional characters",
            reason="invalid",
        )
    return redact(heading)


def _text(data: bytes) -> str:
    return data.decode("utf-8", "surrogateescape")


def _bytes(text: str) -> bytes:
    return text.encode("utf-8", "surrogateescape")


def writer(
    memory: MemorySearchManager,
    *,
    workspace: str | os.PathLike[str] | None = None,
    settings: MemwellSettings | None = None,
) -> MemoryWriter:
    """A :class:`MemoryWriter` for an opened memory (``memwell.writer(open_memory(...))``).

    :param workspace: default: the manager's ``status().workspace_dir``.
    :param settings: default: the workspace's layered configuration; pass the settings the
        memory was opened with when they came from code rather than config files.
    """
    ws = Path(workspace) if workspace is not None else Path(memory.status().workspace_dir)
    return MemoryWriter(memory, ws, settings if settings is not None else load_settings(ws))
