"""The messages of an agent turn, as the lifecycle hooks receive them."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

_TEXT_BLOCK_TYPES = frozenset({"text", "input_text", "output_text"})


@dataclass(frozen=True)
class TurnMessage:
    """One message of an agent turn, as passed to ``memwell_after_turn``."""

    role: str
    content: str

    @classmethod
    def from_openai(cls, message: Mapping[str, Any]) -> TurnMessage:
        """Build from an OpenAI-style message dict.

        ``content`` may be a string, ``None``, or a list of blocks; text blocks (``text``,
        ``input_text``, ``output_text``) and bare strings are joined with newlines, other blocks
        (images, tool calls) are dropped.
        """
        role = message.get("role")
        content = message.get("content")
        if isinstance(content, str):
            text = content
        elif isinstance(content, Sequence):
            parts: list[str] = []
            for block in content:
                if isinstance(block, str):
                    parts.append(block)
                elif (
                    isinstance(block, Mapping)
                    and block.get("type") in _TEXT_BLOCK_TYPES
                    and isinstance(block.get("text"), str)
                ):
                    parts.append(block["text"])
            text = "\n".join(parts)
        else:
            text = ""
        return cls(role=role if isinstance(role, str) else "", content=text)
