"""Conversation turns, and reading them from a JSONL session transcript.

The transcript format is the one :mod:`memwell.sources.sessions` indexes (one JSON record per
line, ``{"type": "message", "message": {"role": ..., "content": ...}}``); plain chat lines
(``{"role": ..., "content": ...}``) are read too. Unlike the index, compression keeps tool
results and line breaks, since collapsing tool output is part of its job. Text is redacted.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass

from memwell.sources.redact import redact

ROLES = frozenset({"system", "user", "assistant", "tool"})
_ROLE_ALIASES = {"toolResult": "tool", "tool_result": "tool", "function": "tool"}
_TEXT_BLOCKS = frozenset({"text", "input_text", "output_text", "tool_result", "toolResult"})


@dataclass(frozen=True)
class Turn:
    """One message of a conversation."""

    role: str
    content: str

    def to_dict(self) -> dict[str, str]:
        return {"role": self.role, "content": self.content}


def _text(content: object) -> str:
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return ""
    parts: list[str] = []
    for block in content:
        if isinstance(block, str):
            parts.append(block)
        elif isinstance(block, Mapping) and block.get("type") in _TEXT_BLOCKS:
            inner = block.get("text", block.get("content"))
            text = _text(inner) if not isinstance(inner, str) else inner
            if text:
                parts.append(text)
    return "\n".join(parts)


def turn_from_message(message: Mapping[str, object]) -> Turn | None:
    """A :class:`Turn` from a chat message mapping, or ``None`` when it carries no text."""
    role = message.get("role")
    if not isinstance(role, str):
        return None
    role = _ROLE_ALIASES.get(role, role)
    text = _text(message.get("content")).strip()
    if role not in ROLES or not text:
        return None
    return Turn(role, redact(text))


def parse_transcript(raw: str) -> list[Turn]:
    """The turns of a JSONL transcript, in order; malformed lines are skipped, never raised."""
    turns: list[Turn] = []
    for line in raw.splitlines():
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except (ValueError, RecursionError):
            continue
        if not isinstance(record, dict):
            continue
        message = record.get("message") if record.get("type") == "message" else record
        if isinstance(message, dict):
            turn = turn_from_message(message)
            if turn is not None:
                turns.append(turn)
    return turns
