"""Embedding cache eviction: least recently used first, on every sync that outgrows the bound.

Issue 20 item 4. Identical chunk text in two files has one hash, so a second file with the same
text is a cache hit; that hit must make the entry recent again.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import closing, contextmanager
from pathlib import Path
from typing import Any

from memwell.contract.manager import MemorySearchManager
from memwell.testing import HashEmbeddingProvider
from memwell_sqlite.driver import sqlite_module

OpenFn = Callable[..., MemorySearchManager]

ALPHA = "# Alpha\n\nalpha facts about the harbour\n"
BETA = "# Beta\n\nbeta facts about the orchard\n"
DELTA = "# Delta\n\ndelta facts about the glacier\n"


@contextmanager
def _index(memory: MemorySearchManager) -> Iterator[Any]:
    """A read-only connection to the published index, with the SQLite the backend uses (a
    second SQLite library on a live WAL database is not what this test is about), closed."""
    db = memory.status().db_path
    assert db is not None
    with closing(sqlite_module().connect(f"file:{db}?mode=ro", uri=True)) as conn:
        yield conn


def _cached(memory: MemorySearchManager) -> set[str]:
    with _index(memory) as conn:
        return {row[0] for row in conn.execute("SELECT hash FROM embedding_cache")}


def test_lru_eviction_on_incremental_syncs(
    open_ws: OpenFn, tmp_path: Path, provider: HashEmbeddingProvider
) -> None:
    ws = tmp_path / "ws"
    (ws / "memory").mkdir(parents=True)
    (ws / "memory" / "a.md").write_text(ALPHA, encoding="utf-8")
    (ws / "memory" / "b.md").write_text(BETA, encoding="utf-8")
    memory = open_ws(ws, cache={"max_entries": 2})
    memory.sync()
    alpha, beta = _hash_of(memory, "memory/a.md"), _hash_of(memory, "memory/b.md")
    assert _cached(memory) == {alpha, beta}

    (ws / "memory" / "c.md").write_text(ALPHA, encoding="utf-8")  # a cache hit on alpha
    embedded = provider.embedded
    memory.sync()
    assert provider.embedded == embedded, "the copy was served from the cache"

    (ws / "memory" / "d.md").write_text(DELTA, encoding="utf-8")  # grows the cache to 3
    memory.sync()
    cached = _cached(memory)
    assert len(cached) == 2, "the bound holds after an incremental sync"
    assert alpha in cached, "the recently used entry stays"
    assert beta not in cached, "the least recently used entry goes"
    assert memory.status().cache.entries == 2  # type: ignore[union-attr]


def _hash_of(memory: MemorySearchManager, path: str) -> str:
    with _index(memory) as conn:
        row = conn.execute("SELECT hash FROM chunks WHERE path = ?", (path,)).fetchone()
    return str(row[0])
