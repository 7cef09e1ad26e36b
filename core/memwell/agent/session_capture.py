"""Session capture: a finished conversation becomes ``memory/YYYY-MM-DD-<slug>.md``.

The port of the reference's session-memory hook. The note holds the last N user and
assistant messages (``[session_save] messages``, 15 by default) in the reference's format::

    # Session: 2026-01-16 14:30:00 UTC

    - **Session Key**: agent:main:main
    - **Session ID**: 5f2c...
    - **Source**: cli

    ## Conversation Summary

    user: Should the billing API use cursor pagination?
    assistant: Yes: cursors stay stable while rows are inserted.

The date and time are those of the last message (UTC), or now when messages carry no time,
so a saved transcript decays by the day the conversation happened. The slug comes from the
configured text generator, else from the conversation's keywords
(:mod:`memwell.writing.slugs`); a taken name gets ``-2``, ``-3``... Each message is one line,
whitespace-normalised and redacted before a generator sees it; slash commands (``/new``) are
left out. The note is written through :meth:`memwell.writing.MemoryWriter.create`, so the
write rules, the lock, atomicity and the index update are the writer's.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

import msgspec

from memwell.contract.errors import (
    InvalidArgumentError,
    MemwellError,
    ProviderError,
    WriteRefusedError,
)
from memwell.contract.messages import TurnMessage
from memwell.contract.records import Record
from memwell.contract.text_generator import TextGenerator
from memwell.registry.plugins import PluginRegistry, get_registry
from memwell.sources.redact import redact
from memwell.sources.sessions import TranscriptMessage, read_transcript_messages
from memwell.textgen.selection import select_text_generator
from memwell.writing.slugs import dated_note_path, generated_slug, keyword_slug

if TYPE_CHECKING:
    from memwell.writing import MemoryWriter

#: Largest transcript ``memwell session save`` reads (the reference forces a flush at 2 MiB;
#: a transcript many times that is not a conversation to summarise in 15 lines).
MAX_TRANSCRIPT_BYTES = 64 * 1024 * 1024
#: Name attempts before giving up (``-2`` ... ``-999``).
MAX_NAME_ATTEMPTS = 999
_WHITESPACE = re.compile(r"\s+")
_ROLES = ("user", "assistant")


class SessionCaptureError(MemwellError):
    """A conversation could not be saved: no messages, or an unreadable transcript."""


class SessionSaveResult(Record, kw_only=True):
    """A saved session note.

    ``messages`` were written out of ``total_messages`` kept; ``skipped_lines`` transcript
    lines were not JSON objects. ``slug_source`` is a generator's id, ``"keywords"``, or
    ``"time"`` (``HHMM``, the reference's fallback, when no keyword is usable);
    ``notes`` lists every fallback taken (generator unavailable or failing, for example).
    """

    path: str
    slug: str
    slug_source: str
    messages: int
    total_messages: int
    skipped_lines: int = 0
    redacted: bool = False
    indexed: bool
    index_error: str | None = None
    notes: list[str] = msgspec.field(default_factory=list)


@dataclass(frozen=True)
class Conversation:
    """What a session note is made from: messages oldest first, where they came from."""

    messages: tuple[TranscriptMessage, ...]
    session_id: str | None = None
    skipped_lines: int = 0


def _one_line(text: str) -> str:
    return _WHITESPACE.sub(" ", text).strip()


def _is_command(text: str) -> bool:
    return text.startswith("/")


def conversation_from_messages(
    messages: Sequence[TurnMessage | Mapping[str, Any]],
) -> Conversation:
    """Keep the user and assistant messages of ``messages`` (OpenAI-style dicts or
    :class:`~memwell.agent.TurnMessage`), one redacted line each; others are dropped."""
    kept: list[TranscriptMessage] = []
    for message in messages:
        turn = message if isinstance(message, TurnMessage) else TurnMessage.from_openai(message)
        text = _one_line(turn.content)
        if turn.role not in _ROLES or not text or _is_command(text):
            continue
        clean = redact(text)
        kept.append(TranscriptMessage(turn.role, clean, 0, clean != text))
    return Conversation(tuple(kept))


def read_transcript(path: str | os.PathLike[str]) -> Conversation:
    """The conversation in a JSONL transcript (the format memwell indexes as sessions).

    Lines that are not JSON objects are counted in ``skipped_lines``, never raised.

    :raises SessionCaptureError: the file cannot be read, is not a file, or is too large.
    """
    file = Path(path)
    try:
        size = file.stat().st_size
        if not file.is_file():
            raise SessionCaptureError(f"transcript {file} is not a file")
        if size > MAX_TRANSCRIPT_BYTES:
            raise SessionCaptureError(
                f"transcript {file} is {size} bytes; the limit is {MAX_TRANSCRIPT_BYTES}"
            )
        raw = file.read_bytes().decode("utf-8", "replace")
    except OSError as exc:
        raise SessionCaptureError(f"cannot read transcript {file}: {exc.strerror}") from None
    parsed = read_transcript_messages(raw)
    kept = tuple(m for m in parsed.messages if not _is_command(m.text))
    return Conversation(kept, parsed.session_id, parsed.malformed_lines)


def _header_value(value: str | None) -> str:
    return redact(_one_line(value)) if value and value.strip() else "unknown"


def render_session_note(
    messages: Sequence[TranscriptMessage],
    *,
    ended_at: datetime,
    session_key: str | None,
    session_id: str | None,
    source: str,
) -> str:
    """The note's Markdown in the reference's format (see the module docstring)."""
    moment = ended_at.astimezone(timezone.utc)
    lines = [
        f"# Session: {moment:%Y-%m-%d %H:%M:%S} UTC",
        "",
        f"- **Session Key**: {_header_value(session_key)}",
        f"- **Session ID**: {_header_value(session_id)}",
        f"- **Source**: {_header_value(source)}",
        "",
        "## Conversation Summary",
        "",
        *(f"{message.role}: {message.text}" for message in messages),
    ]
    return "\n".join(lines) + "\n"


def _ended_at(messages: Sequence[TranscriptMessage], now: datetime | None) -> datetime:
    stamps = [message.timestamp_ms for message in messages if message.timestamp_ms > 0]
    if stamps:
        return datetime.fromtimestamp(max(stamps) / 1000, tz=timezone.utc)
    return (now or datetime.now(timezone.utc)).astimezone(timezone.utc)


def _generator(
    writer: MemoryWriter, registry: PluginRegistry | None, notes: list[str]
) -> TextGenerator | None:
    """The configured generator; ``None`` (keyword slug) when it cannot start, said in notes."""
    try:
        selection = select_text_generator(
            writer.settings, registry or get_registry(), writer.workspace
        )
    except ProviderError as exc:
        notes.append(f"text generator unavailable ({exc}); used the keyword slug")
        return None
    if selection.note:
        notes.append(selection.note)
    return selection.generator


def save_session(
    writer: MemoryWriter,
    conversation: Conversation | Sequence[TurnMessage | Mapping[str, Any]],
    *,
    session_key: str | None = None,
    session_id: str | None = None,
    source: str = "api",
    message_count: int | None = None,
    generator: TextGenerator | None = None,
    registry: PluginRegistry | None = None,
    now: datetime | None = None,
) -> SessionSaveResult:
    """Write ``conversation`` as a new dated session note and index it.

    :param writer: the workspace's writer (:func:`memwell.writing.writer`).
    :param conversation: a :class:`Conversation` (see :func:`read_transcript`) or messages.
    :param session_key: the agent session key (``unknown`` when not given).
    :param session_id: default: the transcript's ``session`` record id, else ``unknown``.
    :param source: where the conversation came from (channel, ``cli``...).
    :param message_count: how many of the last messages to keep (default
        ``[session_save] messages``).
    :param generator: the slug generator (default: the one ``[textgen]`` selects).
    :param now: the time used when messages carry none.
    :raises ValueError: ``message_count`` below 1.
    :raises SessionCaptureError: there is no user or assistant message to save.
    :raises WriteRefusedError: writing is disabled, too large, or no free name was left.
    """
    if not isinstance(conversation, Conversation):
        conversation = conversation_from_messages(conversation)
    if not conversation.messages:
        skipped = conversation.skipped_lines
        detail = f" ({skipped} malformed line{'s' if skipped != 1 else ''} skipped)"
        raise SessionCaptureError(
            "no user or assistant messages to save" + (detail if skipped else "")
        )
    if message_count is not None and message_count < 1:
        raise InvalidArgumentError(f"message_count must be at least 1, got {message_count}")
    count = message_count or writer.settings.session_save.messages
    recent = conversation.messages[-count:]
    ended_at = _ended_at(recent, now)
    notes: list[str] = []
    chosen = generator or _generator(writer, registry, notes)
    texts = [message.text for message in recent]
    if chosen is None:
        slug, slug_source = keyword_slug(texts), "keywords"
    else:
        choice = generated_slug(texts, chosen)
        slug, slug_source = choice.slug, choice.source
        notes.extend([choice.note] if choice.note else [])
    if not slug:
        slug, slug_source = f"{ended_at:%H%M}", "time"
    body = render_session_note(
        recent,
        ended_at=ended_at,
        session_key=session_key,
        session_id=session_id or conversation.session_id,
        source=source,
    )
    for attempt in range(1, MAX_NAME_ATTEMPTS + 1):
        path = dated_note_path(ended_at.date(), slug, attempt)
        try:
            with writer.audited_as("capture"):
                written = writer.create(path, body)
        except WriteRefusedError as exc:
            if exc.reason == "exists":
                continue
            raise
        return SessionSaveResult(
            path=written.path,
            slug=slug,
            slug_source=slug_source,
            messages=len(recent),
            total_messages=len(conversation.messages),
            skipped_lines=conversation.skipped_lines,
            redacted=any(m.redacted for m in recent) or written.redacted,
            indexed=written.indexed,
            index_error=written.index_error,
            notes=notes,
        )
    raise WriteRefusedError(
        f"no free name for the session note: {dated_note_path(ended_at.date(), slug)} "
        f"and {MAX_NAME_ATTEMPTS - 1} suffixed names exist",
        reason="exists",
    )
