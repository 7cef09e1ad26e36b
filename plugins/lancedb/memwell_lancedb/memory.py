"""Long-term memory records: the data model shared by the store, the journal and the tools."""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from typing import Literal, get_args

from memwell.plugin import redact

Category = Literal["preference", "decision", "entity", "fact", "other"]
CATEGORIES: tuple[str, ...] = get_args(Category)
DEFAULT_IMPORTANCE = 0.7
#: Longest text ``store`` accepts (the upper bound of ``capture_max_chars``).
MAX_MEMORY_CHARS = 10_000

_UUID = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$", re.IGNORECASE)
_LINE_BREAKS = re.compile(r"\r\n?")

RECALL_LIMIT = 5
"""How many memories ``memory_recall`` returns by default."""


def is_memory_id(value: object) -> bool:
    """Whether ``value`` is a UUID string (the only ids that reach a delete filter)."""
    return isinstance(value, str) and _UUID.fullmatch(value) is not None


def normalise_text(text: str) -> str:
    """Stored form of a memory text: ``\\r\\n`` and ``\\r`` become ``\\n``, ends stripped."""
    return _LINE_BREAKS.sub("\n", text).strip()


def one_line(text: str | None) -> str | None:
    """``text`` with line breaks replaced by spaces (for single-line fields such as sessions)."""
    if text is None:
        return None
    return " ".join(text.split()) or None


@dataclass(frozen=True)
class Memory:
    """One long-term memory; ``created_at`` is epoch milliseconds (UTC)."""

    id: str
    text: str
    category: str
    importance: float
    created_at: int
    session: str | None = None

    def as_dict(self) -> dict[str, object]:
        return {
            "id": self.id,
            "text": self.text,
            "category": self.category,
            "importance": self.importance,
            "created_at": self.created_at,
            "session": self.session,
        }


#: Recall ranks by ``score * (IMPORTANCE_FLOOR + (1 - IMPORTANCE_FLOOR) * importance)``.
IMPORTANCE_FLOOR = 0.8


@dataclass(frozen=True)
class MemoryHit:
    """A memory found by similarity; ``score`` is the cosine similarity clamped to [0, 1]."""

    memory: Memory
    score: float

    @property
    def rank(self) -> float:
        """The recall order: similarity weighted by importance (importance 0 keeps 80%)."""
        weight = IMPORTANCE_FLOOR + (1.0 - IMPORTANCE_FLOOR) * self.memory.importance
        return self.score * weight

    def as_dict(self) -> dict[str, object]:
        return {**self.memory.as_dict(), "score": round(self.score, 4)}


def redacted(memory: Memory) -> Memory:
    """``memory`` with secrets masked in its text and session (:mod:`memwell.sources.redact`)."""
    session = redact(memory.session) if memory.session else memory.session
    return replace(memory, text=redact(memory.text), session=session)
