"""Session transcripts (JSONL): which files count and how they become searchable text.

Each kept user or assistant message becomes one content line (``User: …`` or
``Assistant: …``), whitespace-normalised and redacted, mapped back to its JSONL line number.
Hostile input never raises: anything malformed is skipped.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import re
from collections.abc import Sequence
from datetime import datetime, timezone
from pathlib import Path

import msgspec

from memwell.sources.discovery import is_real_dir
from memwell.sources.redact import redact
from memwell.util.lazy_import import lazy_pattern

_ARCHIVE_TIMESTAMP = r"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}-[0-9]{2}-[0-9]{2}(?:\.[0-9]{3})?Z"
_TRANSCRIPT_NAME = lazy_pattern(
    rf".*\.jsonl(?:\.(?:reset|deleted)\.{_ARCHIVE_TIMESTAMP})?", re.DOTALL
)
_WHITESPACE = lazy_pattern(r"\s+")
_SURROGATE = lazy_pattern("[\ud800-\udfff]")
_ROLE_LABELS = {"user": "User", "assistant": "Assistant"}
_SECONDS_LIMIT = 1e11
_MAX_EPOCH_MS = 8.64e15
_DREAMING_CUSTOM_TYPE = "openclaw:bootstrap-context:full"
_DREAMING_RUN_PREFIX = "dreaming-narrative-"
TRANSCRIPTS_DIR = "transcripts"
"""Where the reference layout keeps a session's transcripts: ``<sessionKey>/transcripts/``."""


class ParsedSession(msgspec.Struct, frozen=True):
    """Searchable text of one transcript, with a JSONL line and a timestamp per content line."""

    content: str
    line_map: tuple[int, ...]
    timestamps: tuple[int, ...]
    generated_by_dreaming: bool


def is_session_transcript(name: str) -> bool:
    """True for ``*.jsonl`` and archived ``*.jsonl.reset.<ts>`` / ``*.jsonl.deleted.<ts>``."""
    return _TRANSCRIPT_NAME.fullmatch(name) is not None


def readable_sessions_dir(
    workspace: Path, sessions_dir: str, sources: Sequence[str]
) -> Path | None:
    """The transcripts directory ``read_file`` may read: only when sessions are indexed."""
    return (workspace / sessions_dir).resolve() if "sessions" in sources else None


def layout_name(relative: str) -> str | None:
    """``relative`` (``/``-separated, under the sessions directory) when the layout keeps a
    transcript there: ``<file>`` or ``<sessionKey>/transcripts/<file>``; else ``None``."""
    parts = relative.split("/")
    if not is_session_transcript(parts[-1]):
        return None
    if len(parts) == 1:
        return relative
    nested = len(parts) == 3 and parts[1] == TRANSCRIPTS_DIR
    return relative if nested and parts[0] not in ("", ".", "..") else None


def _entries(directory: Path) -> list[os.DirEntry[str]]:
    try:
        with os.scandir(directory) as listing:
            return list(listing)
    except OSError:
        return []


def _transcripts_in(directory: Path) -> list[Path]:
    return [
        Path(entry.path)
        for entry in _entries(directory)
        if is_session_transcript(entry.name) and entry.is_file(follow_symlinks=False)
    ]


def list_session_files(sessions_dir: Path) -> list[Path]:
    """Transcripts in ``sessions_dir`` and in its ``<sessionKey>/transcripts/`` folders (the
    reference layout), sorted: regular files only, no symlinked file or folder followed."""
    found = _transcripts_in(sessions_dir)
    for key in _entries(sessions_dir):
        folder = Path(key.path) / TRANSCRIPTS_DIR
        if key.is_dir(follow_symlinks=False) and is_real_dir(folder):
            found += _transcripts_in(folder)
    return sorted(found)


def _normalise(text: str) -> str:
    return _SURROGATE.sub("\ufffd", _WHITESPACE.sub(" ", text)).strip()


def _message_text(content: object) -> str:
    if isinstance(content, str):
        parts = [content]
    elif isinstance(content, list):
        parts = [
            block["text"]
            for block in content
            if isinstance(block, dict)
            and block.get("type") == "text"
            and isinstance(block.get("text"), str)
        ]
    else:
        return ""
    return " ".join(normalised for normalised in map(_normalise, parts) if normalised)


def _iso_ms(value: str) -> float:
    text = value.strip()
    if text[-1:] in ("Z", "z"):
        text = f"{text[:-1]}+00:00"
    try:
        parsed = datetime.fromisoformat(text)
        if parsed.tzinfo is None:
            parsed = parsed.replace(tzinfo=timezone.utc)
        return parsed.timestamp() * 1000
    except (ValueError, OverflowError):
        return 0.0


def _timestamp_ms(value: object) -> int:
    """Epoch ms from a number (seconds if below 1e11) or an ISO string; 0 if unusable."""
    if isinstance(value, bool):
        return 0
    if isinstance(value, float) and not math.isfinite(value):
        return 0
    if isinstance(value, (int, float)):
        ms: float = value * 1000 if 0 < value < _SECONDS_LIMIT else value
    elif isinstance(value, str):
        ms = _iso_ms(value)
    else:
        return 0
    return int(ms) if 0 < ms <= _MAX_EPOCH_MS else 0


def _record_timestamp(record: dict[str, object], message: dict[str, object]) -> int:
    for candidate in (message.get("timestamp"), record.get("timestamp")):
        ms = _timestamp_ms(candidate)
        if ms:
            return ms
    return 0


def _is_dreaming_marker(record: dict[str, object]) -> bool:
    data = record.get("data")
    if record.get("type") != "custom" or record.get("customType") != _DREAMING_CUSTOM_TYPE:
        return False
    run_id = data.get("runId") if isinstance(data, dict) else None
    return isinstance(run_id, str) and run_id.startswith(_DREAMING_RUN_PREFIX)


def _load_record(line: str) -> dict[str, object] | None:
    if not line.strip():
        return None
    try:
        record = json.loads(line)
    except (ValueError, RecursionError):
        return None
    return record if isinstance(record, dict) else None


class TranscriptMessage(msgspec.Struct, frozen=True):
    """One kept user or assistant message: one line of redacted text, epoch ms (0: unknown),
    and whether redaction changed it."""

    role: str
    text: str
    timestamp_ms: int
    redacted: bool = False


def _kept_message(record: dict[str, object]) -> TranscriptMessage | None:
    """The user or assistant message a record holds, else None."""
    message = record.get("message")
    if record.get("type") != "message" or not isinstance(message, dict):
        return None
    role = message.get("role")
    text = _message_text(message.get("content"))
    if not isinstance(role, str) or role not in _ROLE_LABELS or not text:
        return None
    clean = redact(text)
    return TranscriptMessage(role, clean, _record_timestamp(record, message), clean != text)


def _message_line(record: dict[str, object]) -> tuple[str, int] | None:
    """``("User: text", timestamp)`` for a kept message record, else None."""
    kept = _kept_message(record)
    if kept is None:
        return None
    return f"{_ROLE_LABELS[kept.role]}: {kept.text}", kept.timestamp_ms


class TranscriptMessages(msgspec.Struct, frozen=True):
    """A transcript's kept messages, its session id (from a ``session`` record, if any) and
    how many non-blank lines were not JSON objects."""

    messages: tuple[TranscriptMessage, ...]
    session_id: str | None
    malformed_lines: int


def read_transcript_messages(raw: str) -> TranscriptMessages:
    """The user and assistant messages of a JSONL transcript, oldest first; never raises."""
    messages: list[TranscriptMessage] = []
    session_id: str | None = None
    malformed = 0
    for line in raw.split("\n"):
        if not line.strip():
            continue
        record = _load_record(line)
        if record is None:
            malformed += 1
            continue
        record_id = record.get("id")
        if record.get("type") == "session" and isinstance(record_id, str) and record_id.strip():
            session_id = session_id or _normalise(record_id)
        kept = _kept_message(record)
        if kept is not None:
            messages.append(kept)
    return TranscriptMessages(tuple(messages), session_id, malformed)


def parse_session_jsonl(raw: str) -> ParsedSession:
    """Parse a JSONL transcript into content lines; malformed lines are skipped, never raised."""
    lines: list[str] = []
    line_map: list[int] = []
    timestamps: list[int] = []
    dreaming = False
    for number, line in enumerate(raw.split("\n"), start=1):
        record = _load_record(line)
        if record is None:
            continue
        dreaming = dreaming or _is_dreaming_marker(record)
        kept = _message_line(record)
        if kept is not None:
            lines.append(kept[0])
            line_map.append(number)
            timestamps.append(kept[1])
    return ParsedSession("\n".join(lines), tuple(line_map), tuple(timestamps), dreaming)


def numbered_session_lines(
    parsed: ParsedSession, from_line: int | None, lines: int | None
) -> list[tuple[int, str]]:
    """``(JSONL line, indexed text)`` of the messages on JSONL lines ``from_line`` ..
    ``from_line + lines - 1`` (all of them when neither is given)."""
    first = max(1, from_line or 1)
    last = None if lines is None else first + max(1, lines) - 1
    content = parsed.content.split("\n") if parsed.content else []
    return [
        (number, text)
        for text, number in zip(content, parsed.line_map, strict=True)
        if number >= first and (last is None or number <= last)
    ]


def render_session_lines(parsed: ParsedSession, from_line: int | None, lines: int | None) -> str:
    """The indexed (redacted) text of :func:`numbered_session_lines`, one message per line."""
    return "\n".join(text for _, text in numbered_session_lines(parsed, from_line, lines))


def session_entry_hash(parsed: ParsedSession) -> str:
    """sha256 of content, line map and timestamps; changes whenever any of them changes."""
    payload = "\n".join(
        (
            parsed.content,
            ",".join(map(str, parsed.line_map)),
            ",".join(map(str, parsed.timestamps)),
        )
    )
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()
