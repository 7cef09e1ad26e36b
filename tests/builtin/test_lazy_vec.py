"""An index connection loads sqlite-vec only when the index has its table (a keyword search
of an index built without a model never needs it), or when asked what it has."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from memwell.testing.conformance import write_workspace

OpenFn = Callable[..., Any]

FILES = {
    f"memory/note-{i}.md": f"# Note {i}\n\nThe otter{i} crossed the river.\n" for i in range(4)
}


def _reader(memory: Any) -> Any:
    with memory.files.lock:
        return memory.files.reader_store()


def _has_vec_functions(store: Any) -> bool:
    try:
        store.conn.execute("SELECT vec_version()").fetchone()
    except Exception as exc:
        assert "vec_version" in str(exc)
        return False
    return True


def test_a_keyword_search_of_an_index_without_vectors_does_not_load_sqlite_vec(
    open_ws: OpenFn, tmp_path: Path
) -> None:
    workspace = write_workspace(tmp_path / "ws", FILES)
    open_ws(workspace, provider="none").sync()
    memory: Any = open_ws(workspace, provider="none")  # a one-shot `search --no-sync`
    memory.sync()  # nothing changed: an incremental pass, as `memwell index` makes it
    hits = memory.search("otter2 river", min_score=0.0)
    assert hits[0].path == "memory/note-2.md"
    store = _reader(memory)
    assert not _has_vec_functions(store)
    # Status still says whether the extension loads, loading it on the spot.
    vector = memory.status().vector
    if not store.info.vec_loaded:
        pytest.skip(f"sqlite-vec does not load here: {store.info.vec_error}")
    assert vector.extension_path == store.info.vec_path
    assert vector.load_error is None
    assert _has_vec_functions(store)


def test_a_reader_of_an_index_with_vectors_loads_sqlite_vec_and_searches_with_it(
    open_ws: OpenFn, tmp_path: Path
) -> None:
    workspace = write_workspace(tmp_path / "ws", FILES)
    engine = {"builtin": {"vector_engine": "sqlite-vec"}}
    open_ws(workspace, backends=engine).sync()  # the tests' hash provider
    memory: Any = open_ws(workspace, backends=engine)
    hits = memory.search("otter3 crossed the river", min_score=0.0)
    store = _reader(memory)
    if not store.info.vec_loaded:
        pytest.skip(f"sqlite-vec does not load here: {store.info.vec_error}")
    assert store.vec_dims is not None
    assert memory.vectors.active_engine(store) == "sqlite-vec"
    assert _has_vec_functions(store)
    assert "memory/note-3.md" in [h.path for h in hits]


def test_a_reader_with_vectors_disabled_never_loads_sqlite_vec(
    open_ws: OpenFn, tmp_path: Path
) -> None:
    memory: Any = open_ws(
        write_workspace(tmp_path / "ws", FILES), store={"vector": {"enabled": False}}
    )
    memory.sync()
    memory.search("otter1", min_score=0.0)
    store = _reader(memory)
    assert store.info.vec_error == "disabled by store.vector.enabled = false"
    assert not _has_vec_functions(store)


def test_indexing_and_searching_without_a_model_never_load_sqlite_vec(
    open_ws: OpenFn, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import memwell_sqlite.driver as driver

    loads: list[object] = []
    real = driver._load_vec

    def spy(conn: Any, extension_path: str | None) -> Any:
        loads.append(conn)
        return real(conn, extension_path)

    monkeypatch.setattr(driver, "_load_vec", spy)
    workspace = write_workspace(tmp_path / "ws", FILES)
    memory: Any = open_ws(workspace, provider="none")
    memory.sync()  # the first, full build
    (workspace / "memory" / "note-9.md").write_text("# Note 9\n\nA heron waited.\n")
    memory.sync()  # an incremental pass
    assert [h.path for h in memory.search("heron", min_score=0.0)] == ["memory/note-9.md"]
    assert loads == []
    memory.status()  # status reports the extension: it loads it
    assert len(loads) == 1
