""":class:`MemoryWriter`: the one write path to Markdown memory, for every backend.

Each operation redacts secrets from the text, checks the size limit and the write rules
(:mod:`memwell.writing.targets`), edits the file under the cross-process lock with an atomic
replace (:mod:`memwell.writing.atomic`), then syncs the manager so the next search finds the
new text. Nothing is written when a check fails: a
:class:`~memwell.contract.errors.WriteRefusedError` or
:class:`~memwell.contract.errors.PathNotAllowedError` says why.

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
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path

from memwell.contract.config import MemwellSettings, load_settings
from memwell.contract.errors import MemwellError, PathNotAllowedError, WriteRefusedError
from memwell.contract.layout import ROOT_MEMORY_FILES
from memwell.contract.manager import MemorySearchManager
from memwell.retrieval.supersede_marker import parse_superseded
from memwell.sources.discovery import MEMORY_DIR
from memwell.sources.redact import redact
from memwell.util.lazy_import import lazy_logger, lazy_module
from memwell.writing import edits
from memwell.writing.atomic import (
    FileState,
    append_bytes,
    read_state,
    replace_file,
    sweep_stale_temps,
    write_lock,
)
from memwell.writing.audit import Channel, append_audit, audit_line, check_channel
from memwell.writing.merge import union_merge
from memwell.writing.names import unsafe_character
from memwell.writing.recent import recent_files
from memwell.writing.results import Operation, RecentFile, Supersession, WriteResult
from memwell.writing.supersession import Confirm, find_candidates, mark_lines, new_fact_lines
from memwell.writing.targets import DAILY_FORMAT, ensure_parent, resolve_write_path, target_path

log = lazy_logger(__name__)

LOCK_FILE_NAME = "memory-write.lock"
"""The lock file, in the workspace's index directory."""

Edit = Callable[[str, bool], tuple[edits.Edit, bool]]
"""An edit of the file's text; gets whether the file exists, returns the edit and whether
it created a heading."""
Rewrite = Callable[[str | None], edits.Edit | None]
"""A generated page's new text from its current one (None: missing); None: leave it."""


class MemoryWriter:
    """Writes the Markdown memory of ``workspace`` and keeps ``manager``'s index current.

    :param manager: the workspace's memory; synced after every write.
    :param workspace: the workspace directory.
    :param settings: the workspace's settings (``[write]`` and ``index_dir`` are used).
    :param clock: the local time, for the daily file's date (default: now).
    :param confirm: asked ``(old line, new line)`` before an automatic supersession is kept
        (see :func:`memwell.writing.confirm.text_generator_confirm`); default: none asked.
    :param channel: where the writes come from, for the audit log
        (:mod:`memwell.writing.audit`): ``cli``, ``mcp``, ``api`` (default) or ``watch``.
    """

    def __init__(
        self,
        manager: MemorySearchManager,
        workspace: str | os.PathLike[str],
        settings: MemwellSettings | None = None,
        *,
        clock: Callable[[], datetime] | None = None,
        confirm: Confirm | None = None,
        channel: Channel = "api",
    ) -> None:
        self.manager = manager
        self.workspace = Path(os.path.realpath(workspace))
        self.settings = settings if settings is not None else MemwellSettings()
        self._clock = clock or (lambda: datetime.now().astimezone())
        self.confirm = confirm
        self._no_generator = False
        self.channel = check_channel(channel)
        self._audit_operation: str | None = None

    @contextmanager
    def audited_as(self, operation: str) -> Iterator[None]:
        """Within the block, the audit log names writes ``operation`` (``promote``,
        ``capture``...) instead of the writer's own (``append``, ``create``, ``replace``)."""
        previous, self._audit_operation = self._audit_operation, operation
        try:
            yield
        finally:
            self._audit_operation = previous

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
        self,
        text: str,
        *,
        file: str | None = None,
        heading: str | None = None,
        supersede: bool = True,
    ) -> WriteResult:
        """Append ``text`` as a paragraph; create the file (and the heading) when missing.

        Without ``file`` the target is today's daily file, or ``MEMORY.md`` when ``heading``
        is given. ``file`` is a memory path or a topic name under ``memory/``. With
        ``heading``, the note goes at the end of that section (as its list's next item when
        the section ends in a list). A new file under ``memory/`` starts with a ``# <name>``
        title (``# YYYY-MM-DD`` for the daily file). Older lines the note states a new value
        for are marked superseded (``[write] supersede``; pass ``supersede=False`` to skip the
        lookup for this write).
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

        return self._write("append", target, note, edit, redacted, supersede=supersede)

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

    def supersede(
        self,
        rel_path: str,
        old: str,
        new: str,
        *,
        file: str | None = None,
        heading: str | None = None,
    ) -> WriteResult:
        """Append ``new`` (as :meth:`append` does) and mark the line of ``rel_path`` that
        holds ``old`` superseded by it, whatever ``[write] supersede`` says.

        Refused, with nothing written, unless ``old`` lies within exactly one line of the
        file, and that line is not superseded already.
        """
        target = target_path(rel_path)
        current = self._readable(target)
        if current is None:
            raise WriteRefusedError(f"{target} does not exist", reason="not_found")
        if not old.strip() or "\n" in old.strip("\r\n"):
            raise WriteRefusedError("old_text must be text within one line", reason="invalid")
        needle = old.strip("\r\n")
        holding = [
            (number, line)
            for number, line in enumerate(current.split("\n"), start=1)
            if needle in line
        ]
        if not holding:
            raise WriteRefusedError(f"old_text was not found in {target}", reason="not_found")
        if len(holding) > 1 or current.count(needle) > 1:
            raise WriteRefusedError(
                f"old_text occurs more than once in {target}; pass a longer passage",
                reason="not_unique",
            )
        number, line = holding[0]
        line = line.removesuffix("\r")
        if parse_superseded(line) is not None:
            raise WriteRefusedError(f"{target}:{number} is superseded already", reason="exists")
        written = self.append(new, file=file, heading=heading, supersede=False)
        mark = Supersession(
            path=resolve_write_path(self.workspace, target)[1],
            line=number,
            text=line,
            by=f"{written.path}#L{written.start_line}",
            attribute="explicit",
            old_value=old,
            new_value=new,
        )
        marked = self._mark([mark])
        indexed, index_error = self._sync()
        if not marked[0].marked:
            log.warning("memwell: %s:%d changed before it could be marked", target, number)
        return written.model_copy(
            update={
                "operation": "supersede",
                "superseded": marked,
                "indexed": indexed and written.indexed,
                "index_error": index_error or written.index_error,
            }
        )

    def rewrite(
        self, rel_path: str, render: Rewrite, *, operation: str = "reflect"
    ) -> WriteResult | None:
        """Rewrite a file memwell generates: ``render`` gets its current text (None when
        missing) and returns the new text with the lines it changed, or None to leave it.

        Nothing is written (and None returned) when the text would not change. The write
        rules, the lock, the atomic replace, redaction and the audit line are those of every
        write; the index is not synced (call :meth:`sync` after a batch) and the size limit
        does not apply (the text is memwell's, not the caller's).
        """
        self.check_enabled()
        real, display = resolve_write_path(self.workspace, target_path(rel_path))
        redacted = False

        def edit(current: str, exists: bool) -> tuple[edits.Edit, bool]:
            nonlocal redacted
            change = render(current if exists else None)
            if change is None:  # nothing to change any more: the file stays as it is
                return edits.Edit(current, 1, 1), False
            text = redact(change.text)
            redacted = text != change.text
            return edits.Edit(text, change.start_line, change.end_line), False

        with write_lock(self.lock_file, self.settings.write.lock_timeout_seconds):
            state = read_state(real)
            first = render(_text(state.data) if state.exists else None)
            if first is None or (state.exists and first.text == _text(state.data)):
                return None
            change, _, created, data = self._edit_file(real, display, edit)
            lines = _text(data).split("\n")[change.start_line - 1 : change.end_line]
            written = "\n".join(lines)
            audit_error = self.audit(operation, display, change, written)
        return WriteResult(
            path=display,
            operation="replace",
            start_line=change.start_line,
            end_line=change.end_line,
            bytes_written=len(written.encode("utf-8", "surrogateescape")),
            file_bytes=len(data),
            created=created,
            redacted=redacted,
            indexed=False,
            audit_error=audit_error,
        )

    def sync(self) -> tuple[bool, str | None]:
        """Sync the manager's index now: ``(True, None)``, or ``(False, reason)``."""
        return self._sync()

    def recent(self, limit: int = 10) -> list[RecentFile]:
        """The ``limit`` most recently changed memory files, newest first."""
        return recent_files(self.workspace, limit, self.settings.extra_paths)

    def root_file(self) -> str:
        """``MEMORY.md``, or ``memory.md`` when only that one exists."""
        upper, lower = ROOT_MEMORY_FILES
        if not (self.workspace / upper).exists() and (self.workspace / lower).is_file():
            return lower
        return upper

    def check_enabled(self) -> None:
        """Raise :class:`~memwell.contract.errors.WriteRefusedError` when writing is disabled."""
        if not self.enabled:
            raise WriteRefusedError(
                "memory writing is disabled ([write] enabled = false)", reason="disabled"
            )

    def _checked_text(self, text: str, name: str, *, allow_blank: bool = False) -> str:
        self.check_enabled()
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
        self,
        operation: Operation,
        target: str,
        written: str,
        edit: Edit,
        redacted: bool,
        *,
        supersede: bool = True,
    ) -> WriteResult:
        real, display = resolve_write_path(self.workspace, target)
        with write_lock(self.lock_file, self.settings.write.lock_timeout_seconds):
            sweep_stale_temps(real.parent)
            change, heading_created, created, data = self._edit_file(real, display, edit)
            audit_error = self.audit(operation, display, change, written)
        indexed, index_error = self._sync()
        superseded: list[Supersession] = []
        supersede_error: str | None = None
        if supersede and self.settings.write.supersede != "off":
            lines = change.text.split("\n")[change.start_line - 1 : change.end_line]
            written_lines = new_fact_lines("\n".join(lines), change.start_line)
            superseded, supersede_error = self._supersede_found(display, written_lines)
            if any(s.marked for s in superseded):
                indexed, index_error = self._sync()
        return WriteResult(
            path=display,
            operation=operation,
            start_line=change.start_line,
            end_line=change.end_line,
            bytes_written=len(written.encode("utf-8")),
            file_bytes=len(data),
            created=created,
            heading_created=heading_created,
            redacted=redacted,
            indexed=indexed,
            index_error=index_error,
            superseded=superseded,
            supersede_error=supersede_error,
            audit_error=audit_error,
        )

    def _edit_file(
        self, real: Path, display: str, edit: Edit
    ) -> tuple[edits.Edit, bool, bool, bytes]:
        """Apply ``edit`` to the file (the lock held): the edit, whether it created a heading,
        whether it created the file, and the new bytes (see :meth:`_replaced`)."""
        timeout = self.settings.write.lock_timeout_seconds
        state, change, heading_created, data = self._replaced(real, display, edit, timeout)
        return change, heading_created, not state.exists, data

    def _readable(self, rel_path: str) -> str | None:
        """A writable memory file's text, ``None`` for any other (extra paths are read-only)."""
        try:
            real, _ = resolve_write_path(self.workspace, rel_path)
            return read_state(real).data.decode("utf-8", "surrogateescape")
        except (MemwellError, OSError):
            return None

    def _supersede_found(
        self, path: str, written: list[tuple[int, str]]
    ) -> tuple[list[Supersession], str | None]:
        """The older lines ``written`` supersede, marked unless ``[write] supersede =
        "suggest"``, and what went wrong (logged too): a failed lookup finds nothing, a
        file that refused its marker keeps its line unmarked."""
        if not written:
            return [], None
        try:
            found = find_candidates(
                self.manager, self._readable, path, written, confirm=self._confirmation()
            )
        except Exception as exc:
            error = f"looking for superseded lines failed: {type(exc).__name__}: {exc}"
            log.warning("memwell: written, but %s", error)
            return [], error
        if self.settings.write.supersede == "auto" and found:
            marked = self._mark(found)
            missed = sorted({s.path for s in marked if not s.marked})
            return marked, f"could not mark lines in {', '.join(missed)}" if missed else None
        return found, None

    def _confirmation(self) -> Confirm | None:
        """The check of candidates: ``confirm``, else the text generator's when ``[write]
        supersede_confirm`` asks for it and one is configured (once per writer)."""
        if self.confirm is not None or not self.settings.write.supersede_confirm:
            return self.confirm
        if self._no_generator:
            return None
        # By name: memwell.registry.plugins (which the confirmation needs) stays out of the import
        # graph of the writer, which memwell/__init__ reaches.
        confirm: Confirm | None = lazy_module("memwell.writing.confirm").configured_confirm(
            self.settings, self.workspace
        )
        self.confirm = confirm
        self._no_generator = self.confirm is None
        return self.confirm

    def _mark(self, found: list[Supersession]) -> list[Supersession]:
        """Write the markers of ``found``; each comes back with ``marked`` set (and ``line``
        where it was found), or unmarked when its file refused the edit (logged)."""
        by_path: dict[str, list[Supersession]] = {}
        for item in found:
            by_path.setdefault(item.path, []).append(item)
        marked: dict[int, int] = {}  # id(item) -> the line it was marked on
        for rel_path, items in by_path.items():
            try:
                done = self._mark_file(rel_path, items)
            except (WriteRefusedError, PathNotAllowedError) as exc:
                log.warning("memwell: could not mark superseded lines in %s: %s", rel_path, exc)
                continue
            marked.update((id(items[i]), line) for i, line in done.items())
        return [
            item.model_copy(update={"marked": True, "line": marked[id(item)]})
            if id(item) in marked
            else item
            for item in found
        ]

    def _mark_file(self, rel_path: str, items: list[Supersession]) -> dict[int, int]:
        """Mark ``items`` of one file; the line of each marked one, by position in ``items``."""
        real, display = resolve_write_path(self.workspace, rel_path)
        when = self._clock().date()
        done: dict[int, int] = {}

        def edit(current: str, exists: bool) -> tuple[edits.Edit, bool]:
            if not exists:
                raise WriteRefusedError(f"{display} vanished", reason="not_found")
            text, lines = mark_lines(current, items, when)
            done.clear()
            done.update(lines)
            first = min(lines.values(), default=1)
            return edits.Edit(text, first, max(lines.values(), default=first)), False

        with write_lock(self.lock_file, self.settings.write.lock_timeout_seconds):
            change, _, _, data = self._edit_file(real, display, edit)
            changed = data.decode("utf-8", "surrogateescape").split("\n")
            marked = "\n".join(changed[change.start_line - 1 : change.end_line])
            self.audit("supersede", display, change, marked)
        return done

    def audit(self, operation: str, path: str, change: edits.Edit, written: str) -> str | None:
        """Append the audit line of a write (see :mod:`memwell.writing.audit`); the reason it
        failed (also logged as a warning), else None. Never raises."""
        line = audit_line(
            when=datetime.now(timezone.utc),
            channel=self.channel,
            operation=self._audit_operation or operation,
            path=path,
            start_line=change.start_line,
            end_line=change.end_line,
            content=written.encode("utf-8", "surrogateescape"),
        )
        error = append_audit(self.workspace, line)
        if error is not None:
            log.warning("memwell: written, but %s", error)
        return error

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
    channel: Channel = "api",
) -> MemoryWriter:
    """A :class:`MemoryWriter` for an opened memory (``memwell.writer(open_memory(...))``).

    :param workspace: default: the manager's ``status().workspace_dir``.
    :param settings: default: the workspace's layered configuration; pass the settings the
        memory was opened with when they came from code rather than config files.
    :param channel: the audit log's channel (``api`` unless a CLI, MCP or watch layer).
    """
    ws = Path(workspace) if workspace is not None else Path(memory.status().workspace_dir)
    chosen = settings if settings is not None else load_settings(ws)
    return MemoryWriter(memory, ws, chosen, channel=channel)
