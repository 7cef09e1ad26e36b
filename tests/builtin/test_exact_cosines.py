"""Keyword hits beyond the nearest chunks fuse with their exact cosine, not with 0."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from memwell.plugin import ParsedQuery, SearchRequest
from memwell.testing.conformance import write_workspace

OpenFn = Callable[..., Any]

FILES = {
    "memory/ferry.md": "# Ferry\n\nThe Zanzibar ferry leaves at dawn from the old harbour.\n",
    "memory/garden.md": "# Garden\n\nTomatoes need watering twice a week in July.\n",
}


def request(memory: Any, query: str, limit: int) -> SearchRequest:
    """A search of ``query`` in the memory source with no score floor."""
    hybrid = memory.settings.query.hybrid
    return SearchRequest(
        query=ParsedQuery.bound(query, memory.settings.query.max_chars),
        limit=limit,
        min_score=0.0,
        pool=limit * hybrid.candidate_multiplier,
        sources=frozenset({"memory"}),
        session_key=None,
        hybrid=hybrid,
    )


@pytest.fixture
def opened(open_ws: OpenFn, tmp_path: Path) -> Any:
    memory: Any = open_ws(write_workspace(tmp_path / "ws", FILES))
    memory.sync()
    return memory


def test_keyword_hit_outside_the_vector_hits_fuses_with_its_stored_cosine(opened: Any) -> None:
    with opened.files.lock:
        store = opened.files.reader_store()
        model = opened.files.reader_meta["model"]
    rows = dict(store.conn.execute("SELECT path, rowid FROM chunks").fetchall())
    ids = dict(store.conn.execute("SELECT path, id FROM chunks").fetchall())
    ferry = ids["memory/ferry.md"]
    # The vector side found only the garden note; the query vector is the ferry chunk's own
    # stored vector, so the ferry chunk's exact cosine is 1.
    query_vector = store.vectors_of([ferry], model)[ferry]
    vector_hits = [(rows["memory/garden.md"], 0.9)]

    def top(**fill: Any) -> list[tuple[str, float]]:
        hits = opened.searcher.hybrid(store, request(opened, "Zanzibar", 2), vector_hits, **fill)
        return [(c.path, round(c.vector_score, 4)) for c in hits]

    # Without the cosine the keyword hit fuses as 0.3 * 1.0 and loses to the vector hit.
    assert top() == [("memory/garden.md", 0.9), ("memory/ferry.md", 0.0)]
    assert top(query_vector=query_vector, model=model) == [
        ("memory/ferry.md", 1.0),
        ("memory/garden.md", 0.9),
    ]


def test_vectors_of_skips_unknown_ids_and_other_models(opened: Any) -> None:
    with opened.files.lock:
        store = opened.files.reader_store()
        model = opened.files.reader_meta["model"]
    ids = [row[0] for row in store.conn.execute("SELECT id FROM chunks")]
    found = store.vectors_of([*ids, "no-such-chunk"], model)
    assert set(found) == set(ids)
    assert store.vectors_of(ids, "another-model") == {}


def test_chunks_blend_their_file_mean_vector_cosine(open_ws: OpenFn, tmp_path: Path) -> None:
    long_note = "\n".join(f"Line {i} about harbour ferries and tides." for i in range(12))
    files = {**FILES, "memory/long.md": f"# Long\n\n{long_note}\n"}
    memory: Any = open_ws(
        write_workspace(tmp_path / "ws", files),
        chunking={"tokens": 24, "overlap": 0},
        query={"hybrid": {"file_weight": 0.7}},
    )
    memory.sync()
    with memory.files.lock:
        store = memory.files.reader_store()
        model = memory.files.reader_meta["model"]
    rows = store.conn.execute("SELECT id, path, rowid FROM chunks ORDER BY rowid").fetchall()
    long_ids = [cid for cid, path, _ in rows if path == "memory/long.md"]
    assert len(long_ids) > 2
    vectors = store.vectors_of(long_ids, model)
    total = np.sum([vectors[cid].astype(np.float64) for cid in long_ids], axis=0)
    expected = total / np.linalg.norm(total)
    mean = store.file_vectors([("memory/long.md", "memory")], model)[("memory/long.md", "memory")]
    assert mean == pytest.approx(expected, abs=1e-6)

    query_vector = vectors[long_ids[0]]
    first = next(r for cid, _, r in rows if cid == long_ids[0])
    hits = memory.searcher.hybrid(
        store,
        request(memory, "qwertyuiop", 1),
        [(first, 1.0)],
        query_vector=query_vector,
        model=model,
    )
    file_cosine = float(expected @ query_vector.astype(np.float64))
    assert file_cosine < 0.99
    assert hits[0].id == long_ids[0]
    assert hits[0].vector_score == pytest.approx(0.3 * 1.0 + 0.7 * file_cosine, abs=1e-6)
