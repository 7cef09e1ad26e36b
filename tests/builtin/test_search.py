"""Search behaviour: CJK, hostile queries, score floors, sources, safe reads."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from memwell.contract.errors import PathNotAllowedError
from memwell.contract.manager import MemorySearchManager

OpenFn = Callable[..., MemorySearchManager]

CHINESE = "# 价格\n\n我们每天早上九点检查黄金和白银的价格。\n会议纪要放在共享文件夹里。\n"


@pytest.mark.parametrize("provider_id", ["hash", "none"])
def test_chinese_text_found_with_chinese_query_under_unicode61(
    open_ws: OpenFn, workspace: Path, provider_id: str
) -> None:
    (workspace / "memory" / "zh.md").write_text(CHINESE, encoding="utf-8")
    memory = open_ws(workspace, provider=provider_id)
    memory.sync()
    assert memory.status().fts.tokenizer == "unicode61"  # type: ignore[union-attr]
    for query in ("黄金价格", "白银", "会议纪要在哪里"):
        hits = memory.search(query, min_score=0.0)
        assert hits and hits[0].path == "memory/zh.md", query


def test_chinese_with_trigram_tokenizer(open_ws: OpenFn, workspace: Path) -> None:
    (workspace / "memory" / "zh.md").write_text(CHINESE, encoding="utf-8")
    memory = open_ws(workspace, provider="none", store={"fts": {"tokenizer": "trigram"}})
    memory.sync()
    for query in ("黄金", "检查黄金"):
        hits = memory.search(query, min_score=0.0)
        assert hits and hits[0].path == "memory/zh.md", query


HOSTILE = [
    '"',
    '""',
    "NEAR(",
    "NEAR(a b, 2)",
    "*",
    "a*",
    "^",
    "-",
    "-foo",
    "text:foo",
    "path:memory",
    "((",
    "))",
    "(a OR b",
    "\x00",
    "a\x00b",
    "x" * 10_000,
    "🙂🚀💥",
    "AND",
    "OR NOT",
    "{col1 col2}: x",
    "'; DROP TABLE chunks; --",
    "%_\\",
]


@pytest.mark.parametrize("provider_id", ["hash", "none"])
def test_hostile_queries_never_raise(open_ws: OpenFn, workspace: Path, provider_id: str) -> None:
    memory = open_ws(workspace, provider=provider_id)
    memory.sync()
    for query in HOSTILE:
        assert isinstance(memory.search(query), list), query
    assert memory.status().files == 3, "the index is untouched"


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(query=st.text(max_size=300))
def test_fuzzed_queries_never_raise(open_ws: OpenFn, workspace: Path, query: str) -> None:
    memory = open_ws(workspace, provider="none")
    results = memory.search(query, min_score=0.0)
    for r in results:
        assert 0.0 <= r.score <= 1.0


def test_semantic_neighbour_without_shared_keyword(open_ws: OpenFn, workspace: Path) -> None:
    # the hash provider shares character trigrams between "gardening" and "garden"
    memory = open_ws(workspace)
    memory.sync()
    hits = memory.search("garden watering", min_score=0.0)
    assert hits[0].path == "memory/projects.md"
    assert hits[0].start_line <= 5 <= hits[0].end_line


def test_min_score_and_relaxed_keyword_rescue(open_ws: OpenFn, workspace: Path) -> None:
    memory = open_ws(workspace)
    memory.sync()
    # very high floor: strict filter empties, keyword hits are rescued
    hits = memory.search("Zanzibar", min_score=0.99)
    assert [h.path for h in hits][:1] == ["memory/2026-01-02.md"]
    assert memory.search("qwertyuiopasdf", min_score=0.99) == []


def test_max_results_and_sorting(open_ws: OpenFn, workspace: Path) -> None:
    memory = open_ws(workspace)
    memory.sync()
    hits = memory.search("the", max_results=2, min_score=0.0)
    assert len(hits) <= 2
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)


def msg(role: str, text: str) -> dict[str, Any]:
    return {"type": "message", "message": {"role": role, "content": text}}


def test_sessions_source_indexed_with_jsonl_lines(open_ws: OpenFn, workspace: Path) -> None:
    sessions = workspace / "sessions"
    sessions.mkdir()
    (sessions / "s1.jsonl").write_text(
        '{"type":"session"}\nnot json\n'
        + json.dumps(msg("user", "my key is sk-proj-AbCdEf1234567890XYZabc"))
        + "\n"
        + json.dumps(msg("assistant", "The llama farm opens at nine."))
        + "\n"
    )
    memory = open_ws(workspace, sources=["memory", "sessions"])
    memory.sync()
    hits = memory.search("llama farm", min_score=0.0, sources=["sessions"])
    assert hits and hits[0].path == "sessions/s1.jsonl" and hits[0].source == "sessions"
    assert hits[0].start_line == 3 and hits[0].end_line == 4
    assert all(h.source == "sessions" for h in hits)
    assert not any("AbCdEf1234567890" in h.snippet for h in memory.search("key", min_score=0.0))
    only_memory = memory.search("llama farm", min_score=0.0, sources=["memory"])
    assert all(h.source == "memory" for h in only_memory)


def test_read_file_refuses_traversal_and_symlink_escape(
    open_ws: OpenFn, workspace: Path, tmp_path: Path
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.md").write_text("TOP SECRET\n")
    os.symlink(outside / "secret.md", workspace / "memory" / "link.md")
    os.symlink(outside, workspace / "memory" / "linkdir")
    memory = open_ws(workspace)
    for path in (
        "../outside/secret.md",
        str(outside / "secret.md"),
        "memory/link.md",
        "memory/linkdir/secret.md",
        "memory/../../outside/secret.md",
        "memory/x.txt",
    ):
        with pytest.raises(PathNotAllowedError):
            memory.read_file(path)
    memory.sync()
    assert not any("SECRET" in h.snippet for h in memory.search("TOP SECRET", min_score=0.0))


def test_corrupt_index_is_rebuilt(open_ws: OpenFn, workspace: Path) -> None:
    memory = open_ws(workspace)
    memory.sync()
    db = Path(memory.status().db_path or "")
    memory.close()
    with db.open("r+b") as fh:
        fh.truncate(db.stat().st_size // 2)
    again = open_ws(workspace)
    hits = again.search("Zanzibar", min_score=0.0)
    assert hits and hits[0].path == "memory/2026-01-02.md"
    assert again.status().custom["recovered"]


def test_garbage_index_file_is_rebuilt(open_ws: OpenFn, workspace: Path) -> None:
    memory = open_ws(workspace)
    memory.sync()
    db = Path(memory.status().db_path or "")
    memory.close()
    db.write_bytes(b"this is not sqlite" * 100)
    again = open_ws(workspace)
    assert again.search("Zanzibar", min_score=0.0)[0].path == "memory/2026-01-02.md"
