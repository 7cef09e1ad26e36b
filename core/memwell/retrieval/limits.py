"""Embedding input limits and request batching (by request bytes).

UTF-8 byte length is used as a safe upper bound on a text's token count.
"""

from __future__ import annotations

from collections.abc import Sequence

from memwell.contract.errors import InvalidArgumentError
from memwell.retrieval.chunking import Chunk

KNOWN_MAX_INPUT_TOKENS: dict[str, int] = {
    "openai:text-embedding-3-small": 8192,
    "openai:text-embedding-3-large": 8192,
    "openai:text-embedding-ada-002": 8191,
    "gemini:text-embedding-004": 2048,
    "gemini:gemini-embedding-001": 2048,
    "gemini:gemini-embedding-2-preview": 8192,
    "voyage:voyage-3": 32000,
    "voyage:voyage-3-lite": 16000,
    "voyage:voyage-code-3": 32000,
}
"""Max input tokens of known models, keyed ``"<provider>:<model>"``."""

FALLBACK_MAX_INPUT_TOKENS: dict[str, int] = {"gemini": 2048, "local": 2048, "ollama": 2048}
"""Conservative limits for unknown models of these providers."""

DEFAULT_MAX_INPUT_TOKENS = 8192
"""Limit for unknown models of any other provider."""

HARD_INPUT_LIMIT_BYTES = 8000
"""No embedding input is ever longer than this many UTF-8 bytes."""

MAX_BATCH_BYTES = 8000
"""Default summed UTF-8 size of one embedding request."""

_MAX_UTF8_CHAR_BYTES = 4
_UTF8_CONTINUATION_MASK = 0xC0
_UTF8_CONTINUATION_BITS = 0x80


def max_input_tokens(provider_id: str, model: str, declared: int | None = None) -> int:
    """Return the input limit: a positive ``declared`` value, else the known table, else fallback.

    Provider and model are matched case-insensitively, ignoring surrounding whitespace.
    """
    if declared is not None and declared > 0:
        return declared
    provider = provider_id.strip().lower()
    known = KNOWN_MAX_INPUT_TOKENS.get(f"{provider}:{model.strip().lower()}")
    if known is not None:
        return known
    return FALLBACK_MAX_INPUT_TOKENS.get(provider, DEFAULT_MAX_INPUT_TOKENS)


def _cut_before_continuation(data: bytes, end: int) -> int:
    """Move ``end`` back to the nearest UTF-8 character boundary."""
    while end < len(data) and data[end] & _UTF8_CONTINUATION_MASK == _UTF8_CONTINUATION_BITS:
        end -= 1
    return end


def split_chunk_to_byte_limit(chunk: Chunk, limit_bytes: int) -> list[Chunk]:
    """Split ``chunk`` into the longest pieces of at most ``limit_bytes`` UTF-8 bytes each.

    A chunk within the limit is returned as is. Pieces never split a character, keep the
    chunk's line range and get a fresh hash. Raises ``ValueError`` if ``limit_bytes < 4``
    (the widest UTF-8 character).
    """
    if limit_bytes < _MAX_UTF8_CHAR_BYTES:
        raise InvalidArgumentError(f"limit_bytes must be at least 4, got {limit_bytes}")
    data = chunk.text.encode("utf-8")
    if len(data) <= limit_bytes:
        return [chunk]
    pieces: list[Chunk] = []
    start = 0
    while start < len(data):
        end = _cut_before_continuation(data, min(start + limit_bytes, len(data)))
        text = data[start:end].decode("utf-8")
        pieces.append(Chunk.create(chunk.start_line, chunk.end_line, text))
        start = end
    return pieces


def enforce_input_limit(chunks: Sequence[Chunk], limit_tokens: int) -> list[Chunk]:
    """Split every chunk longer than ``min(limit_tokens, 8000)`` UTF-8 bytes, keeping order."""
    limit = min(limit_tokens, HARD_INPUT_LIMIT_BYTES)
    return [piece for chunk in chunks for piece in split_chunk_to_byte_limit(chunk, limit)]


def batch_by_bytes(texts: Sequence[str], max_bytes: int = MAX_BATCH_BYTES) -> list[list[int]]:
    """Group consecutive indices of ``texts`` into requests of at most ``max_bytes`` UTF-8 bytes.

    A text larger than ``max_bytes`` gets a group of its own.
    """
    groups: list[list[int]] = []
    current: list[int] = []
    current_bytes = 0
    for index, text in enumerate(texts):
        size = len(text.encode("utf-8"))
        if current and current_bytes + size > max_bytes:
            groups.append(current)
            current, current_bytes = [], 0
        current.append(index)
        current_bytes += size
    if current:
        groups.append(current)
    return groups
