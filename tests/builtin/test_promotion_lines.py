"""Promotion a user would keep: exact recalled lines, clean Markdown, dedup, byte-exact undo."""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
from click.testing import CliRunner
from memwell.cli.main import cli
from memwell.contract.config import MemwellSettings, PromotionSettings
from memwell.contract.errors import MemwellError
from memwell.contract.manager import MemorySearchManager
from memwell.curation.promotion import promote, undo_promotion
from memwell.curation.tracking import recalled_lines
from memwell.recall.manager import RecallCachedManager

OpenFn = Callable[..., MemorySearchManager]
NOW = datetime(2026, 12, 4, 12, 0, tzinfo=timezone.utc)
DAILY = (
    "# 2026-12-02\n\n"
    "- Incident: staging DB ran out of disk at 02:00.\n"
    "- Decided to keep the nightly ETL on the old cluster.\n"
    "- Watch test: flaky on CI since Monday.\n"
    "  - nested: the pgbouncer pool is 40 connections.\n"
)
MEMORY = "# Memory\r\n\r\nLong-term notes.\r\n"
#: Scripted recall history: each query is searched once a day, on the day offsets given.
SEARCHES = {
    "staging disk incident": [-3, -2],
    "why did staging db run out of disk": [-2],
    "disk full on staging": [-1],
    "nightly ETL cluster decision": [-3, -1],
    "where does the nightly ETL run": [-2],
    "pgbouncer pool connections": [-2, -1, 0],
}
SETTINGS = MemwellSettings(provider="none", promotion=PromotionSettings(min_score=0.5))


def _workspace(root: Path, memory: str | None = MEMORY) -> Path:
    (root / "memory").mkdir(parents=True)
    (root / "memory/2026-12-02.md").write_text(DAILY)
    if memory is not None:
        (root / "MEMORY.md").write_bytes(memory.encode())
    return root


def _recall(open_ws: OpenFn, ws: Path) -> MemorySearchManager:
    memory = open_ws(ws, provider="none")
    assert isinstance(memory, RecallCachedManager) and memory.tracker is not None
    memory.sync()
    for query, days in SEARCHES.items():
        for day in days:
            moment = NOW + timedelta(days=day)
            memory.tracker._clock = lambda moment=moment: moment  # type: ignore[misc]
            hits = memory.search(query, min_score=0.0, max_results=5)
            assert "memory/2026-12-02.md" in [hit.path for hit in hits]
    memory.tracker._clock = lambda: NOW  # type: ignore[misc]
    return memory


def test_the_lines_recalled_by_a_query_are_its_best_matches() -> None:
    lines = recalled_lines(DAILY, 1, "why did staging db run out of disk")
    assert lines == [(3, "- Incident: staging DB ran out of disk at 02:00.")]
    assert recalled_lines(DAILY, 1, "quantum") == []


def test_exactly_the_recalled_lines_are_promoted_cleanly(open_ws: OpenFn, tmp_path: Path) -> None:
    ws = _workspace(tmp_path / "ws")
    memory = _recall(open_ws, ws)
    result = promote(memory, ws, SETTINGS, clock=lambda: NOW)
    text = (ws / "MEMORY.md").read_bytes().decode()
    assert text == MEMORY + (
        "\r\n## Promoted From Short-Term Memory (2026-12-04)\r\n\r\n"
        "- Incident: staging DB ran out of disk at 02:00.\r\n"
        "- Decided to keep the nightly ETL on the old cluster.\r\n"
    )
    # The unrecalled line of the same chunk stays out; no scores, no merged bullets.
    assert "Watch test" not in text and "[score=" not in text and "- - " not in text
    assert [(line.source, line.recalls, line.queries) for line in result.lines] == [
        ("memory/2026-12-02.md#L3", 4, 3),
        ("memory/2026-12-02.md#L4", 3, 2),
    ]
    # Provenance lives in the sidecar, not in MEMORY.md.
    log = (ws / ".memwell/promotions.jsonl").read_text().splitlines()
    assert [json.loads(row)["source"] for row in log] == [line.source for line in result.lines]


def test_a_line_recalled_by_one_query_only_is_gated(open_ws: OpenFn, tmp_path: Path) -> None:
    ws = _workspace(tmp_path / "ws")
    memory = _recall(open_ws, ws)
    result = promote(memory, ws, SETTINGS, dry_run=True, clock=lambda: NOW)
    # "pgbouncer pool connections" was searched three times: one distinct query (gate: 2).
    assert [line.text for line in result.lines] == [
        "- Incident: staging DB ran out of disk at 02:00.",
        "- Decided to keep the nightly ETL on the old cluster.",
    ]
    loose = MemwellSettings(
        provider="none", promotion=PromotionSettings(min_score=0.5, min_unique_queries=1)
    )
    nested = promote(memory, ws, loose, dry_run=True, clock=lambda: NOW).lines[-1]
    assert nested.text == "- nested: the pgbouncer pool is 40 connections."  # its own bullet
    assert (ws / "MEMORY.md").read_bytes() == MEMORY.encode()  # a dry run writes nothing


def test_what_memory_md_says_already_is_not_promoted_again(open_ws: OpenFn, tmp_path: Path) -> None:
    said = (
        "# Memory\n\n"
        "- Incident: the staging DB ran out of disk at 02:00\n"  # a near-duplicate
        "- decided to keep the nightly ETL on the old cluster "  # the same words, superseded
        "*(superseded 2026-12-03 by MEMORY.md#L9)*\n"
    )
    ws = _workspace(tmp_path / "ws", said)
    memory = _recall(open_ws, ws)
    result = promote(memory, ws, SETTINGS, clock=lambda: NOW)
    assert result.lines == []
    reasons = {skip.source: skip.reason for skip in result.skipped}
    assert reasons["memory/2026-12-02.md#L3"].startswith("a near-duplicate of MEMORY.md's")
    assert reasons["memory/2026-12-02.md#L4"] == "superseded in MEMORY.md"
    assert (ws / "MEMORY.md").read_text() == said


def test_a_second_run_appends_nothing(open_ws: OpenFn, tmp_path: Path) -> None:
    ws = _workspace(tmp_path / "ws")
    memory = _recall(open_ws, ws)
    assert len(promote(memory, ws, SETTINGS, clock=lambda: NOW).lines) == 2
    after = (ws / "MEMORY.md").read_bytes()
    again = promote(memory, ws, SETTINGS, clock=lambda: NOW)
    assert again.lines == [] and {s.reason for s in again.skipped} == {"already in MEMORY.md"}
    assert (ws / "MEMORY.md").read_bytes() == after


def test_undo_restores_memory_md_byte_for_byte(open_ws: OpenFn, tmp_path: Path) -> None:
    ws = _workspace(tmp_path / "ws")
    memory = _recall(open_ws, ws)
    promote(memory, ws, SETTINGS, clock=lambda: NOW)
    assert (ws / "MEMORY.md").read_bytes() != MEMORY.encode()
    undone = undo_promotion(memory, ws, SETTINGS)
    assert (ws / "MEMORY.md").read_bytes() == MEMORY.encode()
    assert len(undone.lines) == 2 and not undone.removed
    with pytest.raises(MemwellError, match="no promotion to undo"):
        undo_promotion(memory, ws, SETTINGS)
    # Undone lines qualify again.
    assert len(promote(memory, ws, SETTINGS, clock=lambda: NOW).lines) == 2


def test_undo_refuses_when_memory_md_changed_since(open_ws: OpenFn, tmp_path: Path) -> None:
    ws = _workspace(tmp_path / "ws")
    memory = _recall(open_ws, ws)
    promote(memory, ws, SETTINGS, clock=lambda: NOW)
    edited = (ws / "MEMORY.md").read_bytes() + b"- my own note\n"
    (ws / "MEMORY.md").write_bytes(edited)
    with pytest.raises(MemwellError, match="changed since the promotion"):
        undo_promotion(memory, ws, SETTINGS)
    assert (ws / "MEMORY.md").read_bytes() == edited


def test_undo_of_a_promotion_that_created_memory_md_removes_it(
    open_ws: OpenFn, tmp_path: Path
) -> None:
    ws = _workspace(tmp_path / "ws", None)
    memory = _recall(open_ws, ws)
    promote(memory, ws, SETTINGS, clock=lambda: NOW)
    assert (ws / "MEMORY.md").exists()
    assert undo_promotion(memory, ws, SETTINGS).removed
    assert not (ws / "MEMORY.md").exists()


def test_cli_dry_run_prints_the_exact_lines_and_undo_takes_them_back(
    open_ws: OpenFn, tmp_path: Path
) -> None:
    ws = _workspace(tmp_path / "ws")
    memory = _recall(open_ws, ws)
    assert isinstance(memory, RecallCachedManager) and memory.tracker is not None
    assert memory.tracker.flush()
    (ws / "memwell.toml").write_text("[promotion]\nmin_score = 0.5\n")
    runner = CliRunner()
    base = ["-w", str(ws), "--provider", "none", "promote"]
    shown = runner.invoke(cli, [*base, "--dry-run"])
    assert shown.exit_code == 0, shown.output
    lines = shown.output.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("dry run:"))
    assert lines[start + 1 : start + 3] == [
        "- Incident: staging DB ran out of disk at 02:00.",
        "- Decided to keep the nightly ETL on the old cluster.",
    ]
    assert lines[start + 3] == "from:"
    assert (ws / "MEMORY.md").read_bytes() == MEMORY.encode()
    done = runner.invoke(cli, base)
    assert done.exit_code == 0 and "--undo" in done.output
    assert runner.invoke(cli, [*base, "--undo"]).exit_code == 0
    assert (ws / "MEMORY.md").read_bytes() == MEMORY.encode()
    refused = runner.invoke(cli, [*base, "--undo"])
    assert refused.exit_code != 0 and "no promotion to undo" in str(refused.exception)
