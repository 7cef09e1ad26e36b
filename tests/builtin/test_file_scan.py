"""File-scan mode: keyword search over the Markdown files when FTS5 cannot serve.

Issue 20 item 1. A SQLite build without FTS5 is simulated with an authorizer that refuses the
``fts5`` module (what such a build answers to ``CREATE VIRTUAL TABLE ... USING fts5``); a
damaged FTS table is made by dropping one of its shadow tables in a real index.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import memwell_sqlite.store
import pytest
from memwell.agent.tools import execute_tool
from memwell.contract.manager import MemorySearchManager
from memwell.sources.file_scan import ScanLimits, scan_memory_files

OpenFn = Callable[..., MemorySearchManager]


def _no_fts5(action: int, arg1: str | None, arg2: str | None, *rest: Any) -> int:
    if action == sqlite3.SQLITE_CREATE_VTABLE and (arg2 or "").lower() == "fts5":
        return sqlite3.SQLITE_DENY
    return sqlite3.SQLITE_OK


@pytest.fixture
def without_fts5(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    real = memwell_sqlite.store.open_connection

    def open_connection(*args: Any, **kwargs: Any) -> Any:
        conn = real(*args, **kwargs)
        conn.set_authorizer(_no_fts5)
        return conn

    monkeypatch.setattr(memwell_sqlite.store, "open_connection", open_connection)
    yield


def test_without_fts5_keyword_search_scans_the_files(
    open_ws: OpenFn, workspace: Path, without_fts5: None
) -> None:
    memory = open_ws(workspace, provider="none")
    memory.sync()
    status = memory.status()
    assert status.fts is not None and not status.fts.available
    assert status.search_mode == "file-scan"
    assert status.degraded is not None and "FTS5" in status.degraded.reason
    hits = memory.search("Zanzibar codename")
    assert hits and hits[0].path == "memory/2026-01-02.md"
    assert hits[0].start_line >= 1 and "Zanzibar" in hits[0].snippet
    payload = execute_tool("memory_search", {"query": "autoscaler nodes"}, memory)
    assert payload["results"][0]["path"] == "memory/projects.md"
    assert payload["mode"] == "file-scan" and payload["degraded"] is True
    assert "FTS5" in payload["degraded_reason"]


def test_without_fts5_hybrid_keeps_vectors_and_says_vector_only(
    open_ws: OpenFn, workspace: Path, without_fts5: None
) -> None:
    memory = open_ws(workspace)
    memory.sync()
    payload = execute_tool("memory_search", {"query": "Zanzibar", "min_score": 0}, memory)
    assert payload["results"] and payload["mode"] == "vector-only"
    assert payload["degraded"] is True


def test_a_damaged_fts_table_falls_back_to_the_file_scan_and_is_rebuilt(
    open_ws: OpenFn, workspace: Path
) -> None:
    memory = open_ws(workspace, provider="none")
    memory.sync()
    db = memory.status().db_path
    assert db is not None
    with sqlite3.connect(db) as conn:  # FTS5 then says "invalid fts5 file format"
        conn.execute("UPDATE chunks_fts_config SET v = 99 WHERE k = 'version'")
    payload = execute_tool("memory_search", {"query": "port 5433"}, memory)
    assert payload["results"] and payload["results"][0]["path"] == "MEMORY.md"
    assert payload["mode"] == "file-scan" and payload["degraded"] is True
    assert "FTS table damaged" in payload["degraded_reason"]
    repair = getattr(memory, "_background", None)
    assert repair is not None, "a rebuild was started"
    repair.join(timeout=60)
    healed = execute_tool("memory_search", {"query": "port 5433"}, memory)
    assert healed["results"][0]["path"] == "MEMORY.md"
    assert healed["mode"] == "fts-only" and healed["degraded"] is False
    assert memory.status().db_path != db, "a new generation replaced the damaged one"


def test_scan_scores_like_bm25_and_respects_its_bounds(workspace: Path, tmp_path: Path) -> None:
    found = scan_memory_files(workspace, "the retro is on Thursday", limit=5)
    assert found.files_scanned == 3 and not found.incomplete
    assert [c.path for c in found.candidates] == ["memory/2026-01-02.md"], (
        "stop words match nothing"
    )
    assert 0 < found.candidates[0].text_score < 1

    big = workspace / "memory" / "big.md"
    big.write_text("Zanzibar " * 2000, encoding="utf-8")
    small = ScanLimits(max_file_bytes=1000)
    bounded = scan_memory_files(workspace, "Zanzibar", limit=5, limits=small)
    assert all(c.path != "memory/big.md" for c in bounded.candidates)
    assert any("big.md skipped" in note for note in bounded.incomplete)

    ticks = iter(range(100))
    timed = scan_memory_files(
        workspace,
        "Zanzibar",
        limit=5,
        limits=ScanLimits(max_seconds=1.5),
        clock=lambda: next(ticks),
    )
    assert timed.files_scanned < 4 and any("time limit" in n for n in timed.incomplete)


def test_scan_finds_chinese_like_the_index(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    (ws / "memory").mkdir(parents=True)
    (ws / "memory" / "zh.md").write_text("# 方案\n\n我们讨论了部署方案。\n", encoding="utf-8")
    (ws / "MEMORY.md").write_text("# Memory\n\nnothing here\n", encoding="utf-8")
    found = scan_memory_files(ws, "部署方案", limit=5)
    assert [c.path for c in found.candidates] == ["memory/zh.md"]


def test_keyword_only_retries_each_keyword_when_the_query_finds_nothing(
    open_ws: OpenFn, tmp_path: Path
) -> None:
    ws = tmp_path / "ws"
    (ws / "memory").mkdir(parents=True)
    (ws / "memory" / "plan.md").write_text(
        "# Plan\n\nThe rollout of the API happens Monday.\n", encoding="utf-8"
    )
    (ws / "memory" / "zh.md").write_text("# 记录\n\n我们讨论了部署方案。\n", encoding="utf-8")
    memory = open_ws(ws, provider="none", store={"fts": {"tokenizer": "trigram"}})
    memory.sync()
    # trigram: "v9" can only be a LIKE term, ANDed with the rest, so the query matches nothing
    hits = memory.search("API rollout v9")
    assert hits and hits[0].path == "memory/plan.md"
    memory = open_ws(ws, provider="none")
    memory.sync()
    # "讨方" is not a bigram of the text; its characters are
    assert [h.path for h in memory.search("讨方", min_score=0)] == ["memory/zh.md"]
