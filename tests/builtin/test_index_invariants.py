"""The builtin indexer's invariants under arbitrary files, runs, edits and deletions.

After every sync: chunk ids are unique, every chunk has exactly one FTS row holding its text
(and one vector row when it has a vector) and no FTS or vector row lacks its chunk, a search
works and finds each file, and the index holds exactly what a fresh full build of the same
files holds (issue 38 item 1).
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path
from typing import Any

import memwell_sqlite.plugin
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from memwell.contract.config import MemwellSettings
from memwell.contract.manager import MemorySearchManager
from memwell.registry.plugins import PluginRegistry
from memwell.retrieval.fts_query import fts_text_and_terms
from memwell.runtime.factory import close_all, open_memory
from memwell.testing import HashEmbeddingProvider, hash_provider_plugin
from memwell_sqlite.store import IndexStore

FILES = ["MEMORY.md", "memory/a.md", "memory/b.md", "memory/deep/c.md"]
WORDS = ["ab", "zeta", "kiwi", "=", "x", "数据", "iVBORw0KGgo", "- [ ]", "#"]

runs = st.builds(
    lambda unit, times, sep: sep.join([unit] * times),
    st.sampled_from([*WORDS, "x", "="]),
    st.integers(1, 1500),
    st.sampled_from(["", " ", "\n"]),
)
lines = st.text(
    alphabet=st.characters(codec="utf-8", exclude_categories=("Cs", "Cc")), max_size=120
)
blocks = st.one_of(runs, lines, st.sampled_from(WORDS).map(lambda w: f"{w}\n" * 40))
contents = st.lists(blocks, min_size=0, max_size=5).map("\n".join)
ops = st.lists(
    st.tuples(st.sampled_from(["write", "append", "delete"]), st.sampled_from(FILES), contents),
    min_size=1,
    max_size=6,
)


def _open(ws: Path, registry: PluginRegistry) -> MemorySearchManager:
    data: dict[str, Any] = {
        "provider": "hash",
        "chunking": {"tokens": 48, "overlap": 8},
        "sync": {"watch": False, "on_search": False},
        "cache": {"recall": {"enabled": False}},
    }
    return open_memory(ws, settings=MemwellSettings.model_validate(data), registry=registry)


def _snapshot(memory: MemorySearchManager) -> tuple[list[tuple[Any, ...]], list[tuple[Any, ...]]]:
    """Check one index's invariants; return its chunks (with FTS text) and its files."""
    db_path = memory.status().db_path
    assert db_path is not None
    store = IndexStore(Path(db_path), read_only=True)
    conn = store.conn
    try:
        chunks = conn.execute(
            "SELECT rowid, id, path, source, start_line, end_line, hash, text, "
            "embedding IS NOT NULL FROM chunks"
        ).fetchall()
        ids = [row[1] for row in chunks]
        assert len(set(ids)) == len(ids), "chunk ids are unique"
        fts = dict(conn.execute("SELECT rowid, text FROM chunks_fts").fetchall())
        assert set(fts) == {row[0] for row in chunks}, "one FTS row per chunk, none stray"
        for row in chunks:
            assert fts[row[0]] == fts_text_and_terms(row[7])[0], "the FTS row is its chunk's"
        if store.vec_dims is not None:
            vec = {r[0] for r in conn.execute("SELECT rowid FROM chunks_vec")}
            assert vec == {row[0] for row in chunks if row[8]}, "one vector row per vector"
        files = sorted(conn.execute("SELECT path, source, hash FROM files").fetchall())
    finally:
        store.close()
    return sorted(row[1:] for row in chunks), files


def _rebuilt(ws: Path, registry: PluginRegistry, scratch: Path) -> tuple[Any, Any]:
    fresh = scratch / "fresh"
    shutil.rmtree(fresh, ignore_errors=True)
    fresh.mkdir()
    for name in FILES:
        if (ws / name).exists():
            (fresh / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ws / name, fresh / name)
    memory = _open(fresh, registry)
    try:
        memory.sync(force=True)
        return _snapshot(memory)
    finally:
        memory.close()


@settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(steps=ops)
def test_every_sync_leaves_the_index_whole_and_equal_to_a_rebuild(
    steps: list[tuple[str, str, str]],
) -> None:
    registry = PluginRegistry(load_entry_points=False)
    registry.register(memwell_sqlite.plugin, "builtin")
    registry.register(hash_provider_plugin(HashEmbeddingProvider()), "hash")
    with tempfile.TemporaryDirectory() as tmp:
        scratch = Path(tmp)
        ws = scratch / "ws"
        ws.mkdir()
        (ws / "MEMORY.md").write_text("# Memory\n", encoding="utf-8")
        memory = _open(ws, registry)
        try:
            memory.sync()
            for n, (op, name, text) in enumerate(steps):
                path = ws / name
                path.parent.mkdir(parents=True, exist_ok=True)
                marker = f"marker{n}q"
                if op == "delete":
                    path.unlink(missing_ok=True)
                elif op == "append" and path.exists():
                    with path.open("a", encoding="utf-8") as fh:
                        fh.write(f"\n{marker}\n{text}")
                else:
                    path.write_text(f"{marker}\n{text}", encoding="utf-8")
                memory.sync()
                chunks, files = _snapshot(memory)
                assert (chunks, files) == _rebuilt(ws, registry, scratch)
                if op != "delete":
                    hits = memory.search(marker, max_results=20, min_score=0.0)
                    assert name in {hit.path for hit in hits}
        finally:
            memory.close()
            close_all()
