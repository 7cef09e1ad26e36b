"""Sync triggers (watcher, interval, background search sync) and optional ranking stages."""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import date, timedelta
from pathlib import Path
from typing import Any

import pytest
from memwell.contract.manager import MemorySearchManager
from memwell_sqlite import indexer

OpenFn = Callable[..., MemorySearchManager]


def wait_for(predicate: Callable[[], bool], timeout: float = 15.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.1)
    return False


def found(memory: MemorySearchManager, query: str, path: str) -> bool:
    return any(h.path == path for h in memory.search(query, min_score=0.0))


def test_watcher_picks_up_new_and_edited_files(open_ws: OpenFn, workspace: Path) -> None:
    memory = open_ws(workspace, sync={"watch": True, "watch_debounce_ms": 100})
    memory.sync()
    (workspace / "memory" / "watched.md").write_text("Narwhals migrate in winter.\n")
    assert wait_for(lambda: found(memory, "narwhals winter", "memory/watched.md"))
    (workspace / "memory" / "watched.md").write_text("Narwhals have one long tusk.\n")
    assert wait_for(
        lambda: any("tusk" in h.snippet for h in memory.search("narwhals", min_score=0.0))
    )


def test_watcher_sees_memory_dir_created_later(open_ws: OpenFn, tmp_path: Path) -> None:
    workspace = tmp_path / "empty"
    workspace.mkdir()
    memory = open_ws(workspace, sync={"watch": True, "watch_debounce_ms": 100})
    memory.sync()
    (workspace / "memory").mkdir()
    time.sleep(0.3)
    (workspace / "memory" / "late.md").write_text("Axolotls regrow limbs.\n")
    assert wait_for(lambda: found(memory, "axolotls", "memory/late.md"))


def test_interval_sync(open_ws: OpenFn, workspace: Path) -> None:
    memory = open_ws(workspace, sync={"interval_minutes": 0.002})  # every 120 ms
    memory.sync()
    (workspace / "memory" / "timer.md").write_text("Capybaras enjoy hot springs.\n")
    assert wait_for(lambda: memory.status().files == 4)
    assert found(memory, "capybaras", "memory/timer.md")


def test_search_while_dirty_syncs_in_background(open_ws: OpenFn, workspace: Path) -> None:
    memory = open_ws(workspace, sync={"on_search": True})
    memory.sync()
    (workspace / "memory" / "bg.md").write_text("Quokkas smile for photos.\n")
    memory._mark_dirty()  # type: ignore[attr-defined]  # what the watcher does on a change
    memory.search("anything")
    assert wait_for(lambda: found(memory, "quokkas photos", "memory/bg.md"))


def test_temporal_decay_prefers_recent_daily_notes(open_ws: OpenFn, workspace: Path) -> None:
    today = date.today()
    old = workspace / "memory" / f"{today - timedelta(days=365)}.md"
    new = workspace / "memory" / f"{today - timedelta(days=1)}.md"
    old.write_text("The wombat feeding schedule is at noon.\n")
    new.write_text("The wombat feeding schedule is at noon.\n")
    decay = {"hybrid": {"temporal_decay": {"enabled": True, "half_life_days": 30}}}
    memory = open_ws(workspace, provider="none", query=decay)
    memory.sync()
    hits = memory.search("wombat feeding schedule", min_score=0.0)
    assert hits[0].path == f"memory/{new.name}"
    scores = {h.path: h.score for h in hits}
    assert scores[f"memory/{old.name}"] < scores[f"memory/{new.name}"] / 100


def test_mmr_diversifies_near_duplicates(open_ws: OpenFn, workspace: Path) -> None:
    for i in range(3):
        (workspace / "memory" / f"dup{i}.md").write_text(
            "Penguin colony census results for the south beach colony.\n"
        )
    (workspace / "memory" / "other.md").write_text("Penguin diet: krill and small fish.\n")
    mmr = {"hybrid": {"mmr": {"enabled": True, "lambda": 0.3}}}
    query = "penguin colony census results"
    penguins = {f"memory/dup{i}.md" for i in range(3)} | {"memory/other.md"}

    def ranks(memory: MemorySearchManager) -> dict[str, int]:
        hits = [h.path for h in memory.search(query, max_results=10, min_score=0)]
        return {path: i for i, path in enumerate(p for p in hits if p in penguins)}

    plain_rank = ranks(open_ws(workspace))
    rank = ranks(open_ws(workspace, query=mmr))
    assert plain_rank["memory/other.md"] == 3, "without MMR the three duplicates come first"
    assert rank["memory/other.md"] < plain_rank["memory/other.md"]


def test_mtime_fast_path_skips_reading(
    open_ws: OpenFn, workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    memory = open_ws(workspace)
    memory.sync()
    reads: list[Path] = []
    real = indexer.read_source_file

    def counting(abs_path: Path, *args: Any, **kwargs: Any) -> Any:
        reads.append(abs_path)
        return real(abs_path, *args, **kwargs)

    monkeypatch.setattr(indexer, "read_source_file", counting)
    memory.sync()
    assert reads == [], "unchanged mtime and size: no file is read"
    (workspace / "MEMORY.md").write_text("changed\n")
    memory.sync()
    assert reads == [workspace / "MEMORY.md"]
