"""Long queries are cut to ``query.max_chars`` before any work, and the cut is reported."""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from conftest import OpenFn
from memwell.agent.tools import execute_tool
from memwell.contract.config import MemwellSettings
from memwell.contract.errors import ConfigError
from memwell.retrieval.query_limit import DEFAULT_MAX_QUERY_CHARS, bound_query
from memwell.testing import HashEmbeddingProvider
from memwell.testing.conformance import write_workspace


def corpus(root: Path) -> Path:
    rng = random.Random(7)
    files = {
        f"memory/note-{i}.md": "# Note\n\n"
        + "\n".join(f"topic{i} word{rng.randrange(200)} item{j}" for j in range(40))
        for i in range(30)
    }
    return write_workspace(root, files)


def one_mb_query() -> str:
    rng = random.Random(11)
    words = " ".join(f"topic{rng.randrange(30)} word{rng.randrange(200)}" for _ in range(70_000))
    return words[:1_000_000]


@pytest.mark.parametrize("provider_id", ["none", "hash"])
def test_a_one_megabyte_query_is_cut_before_any_work(
    open_ws: OpenFn, tmp_path: Path, provider: HashEmbeddingProvider, provider_id: str
) -> None:
    """Only the first ``query.max_chars`` reach the embedder and the index (timed in bench/)."""
    memory = open_ws(corpus(tmp_path / "ws"), provider=provider_id)
    memory.sync()
    embedded: list[int] = []
    provider.fail = lambda texts: embedded.extend(len(text) for text in texts)
    query = one_mb_query()
    results = memory.search(query)
    payload = execute_tool("memory_search", {"query": query}, memory)
    assert results, "the cut query still finds the notes its first terms name"
    prefix = bound_query(query, DEFAULT_MAX_QUERY_CHARS)
    assert [(r.path, r.start_line) for r in results] == [
        (r.path, r.start_line) for r in memory.search(prefix)
    ]
    if provider_id == "hash":
        assert embedded and max(embedded) <= DEFAULT_MAX_QUERY_CHARS
    else:
        assert embedded == []
    assert payload["results"]
    assert payload["warning"] == (
        f"The query has {len(query.strip()):,} characters; only its first "
        f"{DEFAULT_MAX_QUERY_CHARS:,} were searched (query.max_chars)."
    )
    assert memory.status().query_max_chars == DEFAULT_MAX_QUERY_CHARS


def test_the_cut_query_ranks_like_its_prefix(open_ws: OpenFn, tmp_path: Path) -> None:
    memory = open_ws(corpus(tmp_path / "ws"), provider="none", query={"max_chars": 64})
    memory.sync()
    prefix = "topic3 item7 " * 5
    long_query = prefix + "topic9 " * 10_000
    assert [r.path for r in memory.search(long_query)] == [
        r.path for r in memory.search(bound_query(long_query, 64))
    ]
    assert all(r.path == "memory/note-3.md" for r in memory.search(long_query))
    short = execute_tool("memory_search", {"query": "topic3 item7"}, memory)
    assert "warning" not in short


def test_max_chars_is_validated() -> None:
    assert MemwellSettings().query.max_chars == DEFAULT_MAX_QUERY_CHARS
    for bad in (0, 15, 32_769):
        with pytest.raises((ConfigError, ValueError)):
            MemwellSettings.model_validate({"query": {"max_chars": bad}})


def test_bound_query_strips_and_cuts() -> None:
    assert bound_query("  abc  ", 10) == "abc"
    assert bound_query("abcdef", 3) == "abc"
    assert bound_query("ab  cdef", 3) == "ab"
    assert bound_query("x" * 5000, 4000) == "x" * 4000
