"""The Markdown journal of stored memories: readable, editable, diffable, and rebuildable.

Every stored memory is appended as one entry::

    ## 7d3c1f2a-3b9e-4c61-9a57-0b6f4f1d2e8c
    - category: preference
    - importance: 0.7
    - created_at: 2026-11-29T12:40:00.123Z
    - session: agent:main:direct
    > I prefer dark mode
    > in every editor.

The ``## <uuid>`` heading starts an entry; ``- key: value`` lines carry its fields
(``session`` is left out when unknown); every line of the text is quoted with ``> `` (an empty
line as ``>``), so no text can forge a heading or a field. Lines before the first heading are
a free-form preamble. Forgetting a memory removes its entry and leaves every other line as it
was. Appends and removals hold an exclusive lock, so processes on one machine can share it.
Appended entries are redacted (:func:`memwell.sources.redact.redact`), whoever appends them.
"""

from __future__ import annotations

import calendar
import contextlib
import fcntl
import logging
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

from .memory import CATEGORIES, DEFAULT_IMPORTANCE, Memory, is_memory_id, redacted

log = logging.getLogger(__name__)

PREAMBLE = (
    "# Captured memories\n"
    "\n"
    "Long-term memories stored by memwell (LanceDB backend), one entry per memory. You may\n"
    "edit a text (keep its `> ` quoting), change a category or delete a whole entry, then run\n"
    "`memwell ltm rebuild` to load the journal back into the memory store.\n"
)
_HEADING = re.compile(r"^## (\S+)\s*$")
_FIELD = re.compile(r"^- ([a-z_]+): ?(.*)$")
_TIME_FORMAT = "%Y-%m-%dT%H:%M:%S"


def format_timestamp(epoch_ms: int) -> str:
    """Epoch milliseconds as ISO 8601 UTC with milliseconds (``...T12:40:00.123Z``)."""
    moment = datetime.fromtimestamp(epoch_ms // 1000, tz=timezone.utc)
    return f"{moment.strftime(_TIME_FORMAT)}.{epoch_ms % 1000:03d}Z"


def parse_timestamp(text: str) -> int:
    """The inverse of :func:`format_timestamp` (fractional seconds optional)."""
    value = text.strip().removesuffix("Z")
    whole, _, fraction = value.partition(".")
    moment = datetime.strptime(whole, _TIME_FORMAT)
    millis = int((fraction + "000")[:3]) if fraction else 0
    return calendar.timegm(moment.timetuple()) * 1000 + millis


def format_entry(memory: Memory) -> str:
    """One journal entry (ending with a blank line)."""
    lines = [
        f"## {memory.id}",
        f"- category: {memory.category}",
        f"- importance: {memory.importance!r}",
        f"- created_at: {format_timestamp(memory.created_at)}",
    ]
    if memory.session:
        lines.append(f"- session: {memory.session}")
    lines += [f"> {line}" if line else ">" for line in memory.text.split("\n")]
    return "\n".join(lines) + "\n\n"


@dataclass
class ParseResult:
    memories: list[Memory]
    problems: list[str]


def _entry(memory_id: str, fields: dict[str, str], text: list[str], problems: list[str]) -> Memory:
    category = fields.get("category", "other")
    if category not in CATEGORIES:
        problems.append(f"{memory_id}: unknown category {category!r}, using 'other'")
        category = "other"
    try:
        importance = min(1.0, max(0.0, float(fields.get("importance", DEFAULT_IMPORTANCE))))
    except ValueError:
        problems.append(f"{memory_id}: bad importance, using {DEFAULT_IMPORTANCE}")
        importance = DEFAULT_IMPORTANCE
    try:
        created_at = parse_timestamp(fields["created_at"])
    except (KeyError, ValueError):
        problems.append(f"{memory_id}: missing or bad created_at, using 0")
        created_at = 0
    return Memory(
        id=memory_id,
        text="\n".join(text).strip(),
        category=category,
        importance=importance,
        created_at=created_at,
        session=fields.get("session") or None,
    )


def parse_journal(content: str) -> ParseResult:
    """The memories of a journal, in file order; malformed parts are reported, not fatal.

    An entry with an invalid id, an empty text or an id already seen is skipped.
    """
    memories: list[Memory] = []
    problems: list[str] = []
    seen: set[str] = set()
    current: tuple[str, dict[str, str], list[str]] | None = None

    def finish() -> None:
        if current is None:
            return
        memory_id, fields, text = current
        if not is_memory_id(memory_id):
            problems.append(f"skipped entry with invalid id {memory_id!r}")
        elif memory_id in seen:
            problems.append(f"skipped repeated entry {memory_id}")
        else:
            memory = _entry(memory_id, fields, text, problems)
            if memory.text:
                seen.add(memory_id)
                memories.append(memory)
            else:
                problems.append(f"skipped entry {memory_id} with no text")

    for number, line in enumerate(content.split("\n"), start=1):
        heading = _HEADING.match(line)
        if heading is not None:
            finish()
            current = (heading.group(1).lower(), {}, [])
            continue
        if current is None or not line.strip():
            continue
        field = _FIELD.match(line)
        if line.startswith(">"):
            current[2].append(line[2:] if line.startswith("> ") else line[1:])
        elif field is not None and not current[2]:
            current[1][field.group(1)] = field.group(2).strip()
        else:
            problems.append(f"line {number}: ignored (text lines must start with '> ')")
    finish()
    return ParseResult(memories, problems)


class Journal:
    """The journal file of a workspace; ``lock_path`` serialises writers on this machine."""

    def __init__(self, path: Path, lock_path: Path) -> None:
        self.path = path
        self.lock_path = lock_path

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        self.lock_path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.lock_path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)

    def _check_path(self) -> None:
        if self.path.is_symlink():
            raise OSError(f"refusing to write the journal through a symlink: {self.path}")

    def read(self) -> ParseResult:
        """Parse the journal; a missing file has no memories."""
        try:
            content = self.path.read_text(encoding="utf-8", errors="replace")
        except FileNotFoundError:
            return ParseResult([], [])
        return parse_journal(content)

    def exists(self) -> bool:
        return self.path.is_file()

    def append(self, memory: Memory) -> None:
        """Append one entry, secrets masked (creating the file with its preamble first)."""
        entry = format_entry(redacted(memory))
        with self._locked():
            self._check_path()
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with self.path.open("a", encoding="utf-8") as handle:
                if handle.tell() == 0:
                    handle.write(PREAMBLE + "\n")
                handle.write(entry)

    def remove(self, memory_id: str) -> bool:
        """Delete the entry of ``memory_id`` (atomically rewriting the file); True if found."""
        with self._locked():
            self._check_path()
            try:
                lines = self.path.read_text(encoding="utf-8").split("\n")
            except FileNotFoundError:
                return False
            kept: list[str] = []
            removing = found = False
            for line in lines:
                heading = _HEADING.match(line)
                if heading is not None:
                    removing = heading.group(1).lower() == memory_id
                    found = found or removing
                if not removing:
                    kept.append(line)
            if not found:
                return False
            self.write_text("\n".join(kept))
            return True

    def write_text(self, content: str) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_name(f".{self.path.name}.{os.getpid()}.tmp")
        tmp.write_text(content, encoding="utf-8")
        os.replace(tmp, self.path)
