"""Near chunks beyond the keyword side's best fuse with their exact BM25, not with 0."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from memwell.plugin import ParsedQuery, SearchRequest
from memwell.testing.conformance import write_workspace

OpenFn = Callable[..., Any]

# One more "harbour" per note: BM25 ranks tide-5 first, tide-1 last; "garden" has none.
FILES = {
    f"memory/tide-{n}.md": f"# Tide {n}\n\n{' '.join(['harbour'] * n)} ferries wait for the tide.\n"
    for n in range(1, 6)
} | {"memory/garden.md": "# Garden\n\nTomatoes need watering twice a week in July.\n"}


def request(memory: Any, query: str, pool: int, **hybrid: Any) -> SearchRequest:
    """A search of ``query`` in the memory source, ``pool`` candidates a side, no floor."""
    settings = memory.settings.query.hybrid.model_copy(update=hybrid)
    return SearchRequest(
        query=ParsedQuery.bound(query, memory.settings.query.max_chars),
        limit=10,
        min_score=0.0,
        pool=pool,
        sources=frozenset({"memory"}),
        session_key=None,
        hybrid=settings,
    )


@pytest.fixture
def opened(open_ws: OpenFn, tmp_path: Path) -> Any:
    memory: Any = open_ws(write_workspace(tmp_path / "ws", FILES))
    memory.sync()
    return memory


def test_vector_hit_outside_the_keyword_best_fuses_with_its_exact_bm25(opened: Any) -> None:
    with opened.files.lock:
        store = opened.files.reader_store()
    rowid = dict(store.conn.execute("SELECT path, rowid FROM chunks").fetchall())
    everything = opened.searcher.keyword(store, "harbour", 10, ["memory"])
    magnitude = {c.path: c.text_score / (1 - c.text_score) for c in everything}
    assert len(magnitude) == 5
    # The keyword side keeps its 2 best (tide-5, tide-4); the vector side found tide-1 and
    # the garden note, neither among them.
    vector_hits = [(rowid["memory/tide-1.md"], 0.5), (rowid["memory/garden.md"], 0.4)]

    def text_scores(**hybrid: Any) -> dict[str, float]:
        hits = opened.searcher.hybrid(store, request(opened, "harbour", 2, **hybrid), vector_hits)
        return {c.path: round(c.text_score, 6) for c in hits}

    expected = round(magnitude["memory/tide-1.md"] / magnitude["memory/tide-5.md"], 6)
    assert 0 < expected < 1
    weighted = text_scores()
    assert weighted["memory/tide-1.md"] == expected
    assert weighted["memory/tide-5.md"] == 1.0
    assert weighted["memory/garden.md"] == 0.0  # matches no query term
    assert "memory/tide-2.md" not in weighted  # found by neither side
    # RRF ranks by list positions: a filled-in keyword score has no rank of its own.
    assert text_scores(fusion="rrf")["memory/tide-1.md"] == 0.0


def test_bm25_of_matches_the_keyword_ranking(opened: Any) -> None:
    with opened.files.lock:
        store = opened.files.reader_store()
    fts = opened.searcher._pruned_fts(store, "harbour tide")
    ranked = store.conn.execute(
        "SELECT rowid, bm25(chunks_fts) FROM chunks_fts WHERE chunks_fts MATCH ?", (fts.match,)
    ).fetchall()
    wanted = [rowid for rowid, _ in ranked[::2]]
    garden = store.conn.execute(
        "SELECT rowid FROM chunks WHERE path = 'memory/garden.md'"
    ).fetchone()[0]
    found = store.bm25_of(fts, [*wanted, garden])
    assert found == {rowid: rank for rowid, rank in ranked if rowid in wanted}
    assert store.bm25_of(fts, []) == {}
