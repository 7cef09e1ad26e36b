"""The ``memories`` table: store (with dedupe), recall, forget, list and rebuild long-term memories.

Scores are cosine similarities clamped to [0, 1] (the reference used ``1/(1+L2)``). Vectors
belong to one provider's vector space, recorded in the meta table; opening the table with
another provider re-embeds every memory (same ids, texts and metadata) before any search, so
vectors of two models are never compared.

A lost table (its directory deleted, say) is rebuilt from the journal as soon as an operation
finds it missing, in this process or a new one; :attr:`MemoryStore.recovery` says when, and
``status()`` shows it.

Every text is redacted (:func:`memwell.sources.redact.redact`) before it is embedded or
written: a stored memory, a re-embedded table and a rebuild from a hand-edited journal.
"""

from __future__ import annotations

import functools
import logging
import math
import threading
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Concatenate, Literal, ParamSpec, TypeVar

import pyarrow as pa  # type: ignore[import-untyped,unused-ignore]
from memwell.plugin import (
    EmbeddingRuntime,
    InvalidArgumentError,
    ProviderUnavailableError,
    Vector,
    clamp01,
    looks_like_prompt_injection,
    redact,
)

from .capture import is_trivial
from .db import LanceDatabase, Table, arrow_rows, sql_literal, vector_type
from .journal import Journal, format_timestamp
from .memory import (
    CATEGORIES,
    DEFAULT_IMPORTANCE,
    MAX_MEMORY_CHARS,
    RECALL_LIMIT,
    Memory,
    MemoryHit,
    is_memory_id,
    normalise_text,
    one_line,
    redacted,
)

log = logging.getLogger(__name__)

MEMORIES_TABLE = "memories"
META_KEY = "memories"
DUPLICATE_SIMILARITY = 0.95
RECALL_MIN_SCORE = 0.1
#: Recall looks at this many times ``limit`` nearest memories before ranking by importance.
RECALL_POOL_FACTOR = 4
FORGET_CANDIDATES = 5
FORGET_MIN_SCORE = 0.7
FORGET_AUTO_DELETE = 0.9
#: Writes between two ``optimize()`` calls (each ``add`` or ``delete`` is a new version).
OPTIMIZE_EVERY = 64
_COLUMNS = ["id", "text", "category", "importance", "created_at", "session"]


def memories_schema(dims: int) -> pa.Schema:
    return pa.schema(
        [
            ("id", pa.string()),
            ("text", pa.string()),
            ("vector", vector_type(dims)),
            ("importance", pa.float64()),
            ("category", pa.string()),
            ("created_at", pa.int64()),
            ("session", pa.string()),
        ]
    )


class MemoryRejected(ValueError):
    """A text that must not be stored; ``reason`` is a short machine-readable code."""

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason


@dataclass(frozen=True)
class StoreOutcome:
    """``created`` with the new memory, or ``duplicate`` with the existing one and its score."""

    action: Literal["created", "duplicate"]
    memory: Memory
    score: float | None = None
    journal_error: str | None = None


@dataclass
class RebuildReport:
    count: int
    problems: list[str] = field(default_factory=list)


_P = ParamSpec("_P")
_T = TypeVar("_T")


def _recovers_lost_table(
    method: Callable[Concatenate[MemoryStore, _P], _T],
) -> Callable[Concatenate[MemoryStore, _P], _T]:
    """Retry ``method`` once when it failed because the memories table vanished under a
    cached handle; the retry finds the table missing and rebuilds it from the journal."""

    def wrapper(self: MemoryStore, /, *args: _P.args, **kwargs: _P.kwargs) -> _T:
        try:
            return method(self, *args, **kwargs)
        except (RuntimeError, OSError):  # what LanceDB raises for a dataset that is gone
            with self._lock:
                if MEMORIES_TABLE in self.db.table_names():
                    raise
                self.db.forget(MEMORIES_TABLE)
            return method(self, *args, **kwargs)

    functools.update_wrapper(wrapper, method)
    return wrapper


def _memory(row: dict[str, Any]) -> Memory:
    return Memory(
        id=row["id"],
        text=row["text"],
        category=row["category"],
        importance=float(row["importance"]),
        created_at=int(row["created_at"]),
        session=row["session"],
    )


class MemoryStore:
    """Long-term memories in one LanceDB table, mirrored to an optional Markdown journal.

    Writes in this process are serialised, so a duplicate check and its insert are atomic
    here; writers in other processes or machines may race (see the README).
    """

    def __init__(
        self, db: LanceDatabase, runtime: EmbeddingRuntime, journal: Journal | None = None
    ) -> None:
        self.db = db
        self.runtime = runtime
        self.journal = journal
        self._lock = threading.RLock()
        self._checked = False
        self._writes = 0
        #: The last automatic rebuild of a lost table: when, how many memories, from where.
        self.recovery: dict[str, Any] | None = None

    # -- the table --------------------------------------------------------------------------

    def _require_provider(self) -> None:
        if self.runtime.provider is None:
            raise ProviderUnavailableError(
                "long-term memories need an embedding provider (keyword-only mode cannot "
                "store or recall them)"
            )

    def _table(self, *, create: bool) -> Table | None:
        """The memories table in the active vector space (re-embedded if it was not)."""
        self._require_provider()
        with self._lock:
            table = self.db.open(MEMORIES_TABLE) or self._recover_lost_table()
            if table is not None and not self._checked:
                meta = self.db.get_meta(META_KEY) or {}
                if meta.get("provider_key") != self.runtime.provider_key():
                    log.warning("memwell lancedb: re-embedding memories for a new provider")
                    table = self._write_all(self._all(table))
                self._checked = True
            if table is None and create:
                table = self._write_all([])
                self._checked = True
            return table

    def _recover_lost_table(self) -> Table | None:
        """Rebuild the missing table from the journal's entries; ``None`` if it has none."""
        parsed = self.journal.read() if self.journal is not None else None
        if self.journal is None or parsed is None or not parsed.memories:
            return None
        log.warning(
            "memwell lancedb: the memories table is missing; rebuilding %d memories from %s",
            len(parsed.memories),
            self.journal.path,
        )
        table = self._write_all(parsed.memories)
        self._checked = True
        self.recovery = {
            "at": format_timestamp(int(time.time() * 1000)),
            "memories": len(parsed.memories),
            "journal": str(self.journal.path),
            "reason": "the memories table was missing",
        }
        return table

    def _write_all(self, memories: Sequence[Memory]) -> Table:
        """Replace the table with ``memories`` (redacted and embedded now) in one commit."""
        memories = [redacted(m) for m in memories]
        texts = [m.text for m in memories]
        matrix = self.runtime.embed_documents(texts) if texts else None
        dims = int(matrix.shape[1]) if matrix is not None else self._dims()
        schema = memories_schema(dims)
        rows = (
            [{**m.as_dict(), "vector": matrix[i]} for i, m in enumerate(memories)]
            if matrix is not None
            else []
        )
        table = self.db.create(MEMORIES_TABLE, schema, arrow_rows(rows, schema))
        self.db.put_meta(META_KEY, {"provider_key": self.runtime.provider_key(), "dims": dims})
        return table

    def _dims(self) -> int:
        return self.runtime.dims or len(self.runtime.embed_query("dimensions"))

    @staticmethod
    def _all(table: Table) -> list[Memory]:
        return [_memory(r) for r in table.search().select(_COLUMNS).to_list()]

    def _after_write(self, table: Table) -> None:
        self._writes += 1
        if self._writes % OPTIMIZE_EVERY == 0:
            try:
                table.optimize()
            except Exception as exc:  # another writer may be compacting the same table
                log.info("memwell lancedb: optimize skipped: %s", exc)

    @staticmethod
    def _nearest(table: Table, vector: Vector, limit: int) -> list[MemoryHit]:
        rows = (
            table.search(vector, vector_column_name="vector")
            .distance_type("cosine")
            .limit(limit)
            .select([*_COLUMNS, "_distance"])
            .to_list()
        )
        return [MemoryHit(_memory(r), clamp01(1.0 - float(r["_distance"]))) for r in rows]

    # -- operations -------------------------------------------------------------------------

    @_recovers_lost_table
    def store(
        self,
        text: str,
        *,
        importance: float = DEFAULT_IMPORTANCE,
        category: str = "other",
        session: str | None = None,
    ) -> StoreOutcome:
        """Store ``text`` unless a memory at least 0.95 similar exists.

        The text is redacted first, so no secret reaches the provider, the table or the journal.

        :raises MemoryRejected: empty, trivial, longer than 10,000 characters, or prompt
            injection.
        :raises ValueError: an unknown category or an importance outside [0, 1].
        """
        clean = redact(normalise_text(text))
        if not clean:
            raise MemoryRejected("empty", "the memory text is empty")
        if is_trivial(clean):
            raise MemoryRejected(
                "trivial", "the memory text is trivial (filler or under 3 letters)"
            )
        if len(clean) > MAX_MEMORY_CHARS:
            raise MemoryRejected("too_long", f"memories are at most {MAX_MEMORY_CHARS} characters")
        if looks_like_prompt_injection(clean):
            raise MemoryRejected("prompt_injection", "the text looks like prompt injection")
        if category not in CATEGORIES:
            raise InvalidArgumentError(
                f"category must be one of {', '.join(CATEGORIES)}, got {category!r}"
            )
        if not (math.isfinite(importance) and 0.0 <= importance <= 1.0):
            raise InvalidArgumentError(f"importance must be between 0 and 1, got {importance!r}")
        self._require_provider()
        vector = self.runtime.embed_documents([clean])[0]
        with self._lock:
            table: Table = self._table(create=True)
            nearest = self._nearest(table, vector, 1)
            if nearest and nearest[0].score >= DUPLICATE_SIMILARITY:
                return StoreOutcome("duplicate", nearest[0].memory, nearest[0].score)
            memory = Memory(
                id=str(uuid.uuid4()),
                text=clean,
                category=category,
                importance=float(importance),
                created_at=int(time.time() * 1000),
                session=one_line(redact(session) if session else session),
            )
            schema = table.schema
            table.add(arrow_rows([{**memory.as_dict(), "vector": vector}], schema))
            self._after_write(table)
        journal_error = None
        if self.journal is not None:
            try:
                self.journal.append(memory)
            except OSError as exc:
                journal_error = f"{type(exc).__name__}: {exc}"
                log.warning("memwell lancedb: journal append failed: %s", journal_error)
        return StoreOutcome("created", memory, journal_error=journal_error)

    @_recovers_lost_table
    def recall(
        self, query: str, *, limit: int = RECALL_LIMIT, min_score: float = RECALL_MIN_SCORE
    ) -> list[MemoryHit]:
        """The ``limit`` best memories for ``query`` among those at least ``min_score``
        similar: the most similar of ``limit * 4`` candidates, ranked by similarity weighted
        with importance (:attr:`MemoryHit.rank`)."""
        if not query.strip() or limit < 1:
            return []
        table = self._table(create=False)
        if table is None:
            return []
        vector = self.runtime.embed_query(query)
        pool = self._nearest(table, vector, limit * RECALL_POOL_FACTOR)
        found = [hit for hit in pool if hit.score >= min_score]
        return sorted(found, key=lambda h: (-h.rank, -h.score, h.memory.id))[:limit]

    @_recovers_lost_table
    def get(self, memory_id: str) -> Memory | None:
        """The memory with this id, or ``None``; the id must be a UUID."""
        if not is_memory_id(memory_id):
            raise InvalidArgumentError(f"memory id must be a UUID, got {memory_id!r}")
        table = self._table(create=False)
        if table is None:
            return None
        where = f"id = {sql_literal(memory_id.lower())}"
        rows = table.search().where(where).limit(1).select(_COLUMNS).to_list()
        return _memory(rows[0]) if rows else None

    @_recovers_lost_table
    def forget(self, memory_id: str) -> Memory | None:
        """Delete the memory ``memory_id`` (and its journal entry); returns it, or ``None``."""
        with self._lock:
            memory = self.get(memory_id)
            table = self._table(create=False)
            if memory is None or table is None:
                return None
            table.delete(f"id = {sql_literal(memory.id)}")
            self._after_write(table)
        if self.journal is not None:
            self.journal.remove(memory.id)
        return memory

    @_recovers_lost_table
    def list(self, *, limit: int | None = None) -> list[Memory]:
        """Memories, newest first."""
        table = self._table(create=False)
        if table is None:
            return []
        memories = sorted(self._all(table), key=lambda m: (-m.created_at, m.id))
        return memories if limit is None else memories[:limit]

    @_recovers_lost_table
    def stats(self) -> dict[str, Any]:
        """Counts in total and per category, and the vector dimensions."""
        table = self._table(create=False)
        if table is None:
            return {"count": 0, "categories": dict.fromkeys(CATEGORIES, 0), "dims": None}
        categories = {c: table.count_rows(f"category = {sql_literal(c)}") for c in CATEGORIES}
        dims = table.schema.field("vector").type.list_size
        return {"count": table.count_rows(), "categories": categories, "dims": dims}

    def rebuild_from_journal(self) -> RebuildReport:
        """Replace the memories table with the journal's entries (same ids and metadata).

        :raises FileNotFoundError: when there is no journal to rebuild from.
        """
        if self.journal is None or not self.journal.exists():
            where = self.journal.path if self.journal is not None else "(journal disabled)"
            raise FileNotFoundError(f"no memory journal to rebuild from: {where}")
        self._require_provider()
        parsed = self.journal.read()
        with self._lock:
            self._write_all(parsed.memories)
            self._checked = True
        for problem in parsed.problems:
            log.warning("memwell lancedb journal: %s", problem)
        return RebuildReport(len(parsed.memories), parsed.problems)
