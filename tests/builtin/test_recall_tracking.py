"""Recall tracking and promotion on the real builtin backend (SQLite FTS5, hash provider)."""

from __future__ import annotations

import json
import math
import multiprocessing
import sqlite3
import time
from collections.abc import Callable
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
from click.testing import CliRunner
from memwell.cli.main import cli
from memwell.contract.config import MemwellSettings, PromotionSettings
from memwell.contract.manager import MemorySearchManager
from memwell.contract.models import MemorySearchResult, ReadFileResult
from memwell.curation import tracking
from memwell.curation.promotion import promote, rank_candidates
from memwell.curation.tracking import RecallTracker, query_hash
from memwell.recall.manager import RecallCachedManager
from memwell.retrieval.keywords import extract_keywords

OpenFn = Callable[..., MemorySearchManager]
UTC = timezone.utc
NOW = datetime(2026, 12, 2, 12, 0, tzinfo=UTC)


def _sidecar_rows(workspace: Path, memory: MemorySearchManager) -> dict[str, sqlite3.Row]:
    assert isinstance(memory, RecallCachedManager) and memory.tracker is not None
    assert memory.tracker.flush()  # recording runs in the background
    conn = sqlite3.connect(workspace / ".memwell" / "recall-tracking.sqlite")
    conn.row_factory = sqlite3.Row
    try:
        return {row["key"]: row for row in conn.execute("SELECT * FROM recalls")}
    finally:
        conn.close()


def _daily_workspace(root: Path) -> Path:
    (root / "memory").mkdir(parents=True)
    (root / "MEMORY.md").write_text("# Memory\n\nLong-term notes.\n")
    (root / "memory" / "2026-11-28.md").write_text(
        "# 2026-11-28\n\nThe billing API rate limit is 100 requests per minute.\n"
    )
    (root / "memory" / "2026-11-29.md").write_text(
        "# 2026-11-29\n\nDeploys to production happen on Tuesdays after standup.\n"
    )
    (root / "memory" / "2026-11-30.md").write_text("# 2026-11-30\n\nLunch was pasta.\n")
    return root


def test_every_search_and_cached_hit_is_recorded_and_a_read_grounds(
    open_ws: OpenFn, tmp_path: Path
) -> None:
    ws = _daily_workspace(tmp_path / "ws")
    memory = open_ws(ws, provider="none")
    assert isinstance(memory, RecallCachedManager) and memory.tracker is not None
    memory.sync()
    first = memory.search("billing rate limit", min_score=0.0)
    assert first and first[0].path == "memory/2026-11-28.md"
    assert memory.search("billing rate limit", min_score=0.0) == first  # the cache answers
    assert memory.status().recall_cache.exact.hits == 1  # type: ignore[union-attr]
    memory.search("requests per minute", min_score=0.0)
    key = f"memory:{first[0].path}:{first[0].start_line}:{first[0].end_line}"
    row = _sidecar_rows(ws, memory)[key]
    assert row["recall_count"] == 3  # the cached answer counts as a recall
    assert row["daily_count"] == 3
    assert row["grounded_count"] == 0
    assert json.loads(row["query_hashes"]) == [
        query_hash("billing rate limit"),
        query_hash("requests per minute"),
    ]
    assert row["max_score"] == pytest.approx(max(r.score for r in first if r.path == first[0].path))
    hit = first[0]
    memory.read_file(hit.path, from_line=3, lines=5)  # the fact's line, inside the chunk
    memory.read_file("memory/2026-11-29.md", from_line=1, lines=3)  # another file: no grounding
    row = _sidecar_rows(ws, memory)[key]
    assert row["grounded_count"] == 1
    tracking = memory.status().recall_tracking
    assert tracking is not None and tracking.entries >= 1 and tracking.error is None


def test_a_broken_sidecar_never_breaks_search_and_is_reported(
    open_ws: OpenFn, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    ws = _daily_workspace(tmp_path / "ws")
    (ws / ".memwell").mkdir()
    (ws / ".memwell" / "recall-tracking.sqlite").write_bytes(b"not a database" * 100)
    memory = open_ws(ws, provider="none")
    memory.sync()
    results = memory.search("billing rate limit", min_score=0.0)
    assert results and results[0].path == "memory/2026-11-28.md"
    tracking = memory.status().recall_tracking
    assert tracking is not None and tracking.error is not None
    assert "DatabaseError" in tracking.error
    assert "recall tracking" in caplog.text
    runner = CliRunner()
    shown = runner.invoke(cli, ["-w", str(ws), "--provider", "none", "status"])
    assert "recall tracking:" in shown.output and "ERROR" in shown.output


def test_a_locked_sidecar_never_makes_a_search_wait(open_ws: OpenFn, tmp_path: Path) -> None:
    ws = _daily_workspace(tmp_path / "ws")
    memory = open_ws(ws, provider="none", cache={"recall": {"enabled": False}})
    memory.sync()
    memory.search("billing rate limit", min_score=0.0)
    _sidecar_rows(ws, memory)  # the sidecar exists now
    other = sqlite3.connect(ws / ".memwell" / "recall-tracking.sqlite", isolation_level=None)
    other.execute("BEGIN IMMEDIATE")  # another process holds the write lock
    try:
        for _ in range(5):  # each returns at once; the writer thread waits for the lock
            assert memory.search("billing rate limit", min_score=0.0)
        assert memory.tracker.flush(timeout=0.05) is False  # type: ignore[attr-defined]
    finally:
        other.execute("ROLLBACK")
        other.close()
    rows = _sidecar_rows(ws, memory)
    assert max(row["recall_count"] for row in rows.values()) == 6


def test_disabled_tracking_writes_no_sidecar(open_ws: OpenFn, tmp_path: Path) -> None:
    ws = _daily_workspace(tmp_path / "ws")
    memory = open_ws(ws, provider="none", recall_tracking={"enabled": False})
    memory.sync()
    assert memory.search("billing rate limit", min_score=0.0)
    assert not (ws / ".memwell" / "recall-tracking.sqlite").exists()
    assert memory.status().recall_tracking is None


def _record_in_process(path: str, count: int) -> None:
    tracker = RecallTracker(Path(path))
    hit = MemorySearchResult(
        path="memory/2026-11-28.md", start_line=1, end_line=3, score=0.5, snippet="x y z"
    )
    for i in range(count):
        tracker.record_search(f"query {i % 3}", [hit])
    assert tracker.last_error is None
    tracker.close()


def test_concurrent_processes_lose_no_recall(tmp_path: Path) -> None:
    path = tmp_path / "idx" / "recall-tracking.sqlite"
    ctx = multiprocessing.get_context("spawn")
    workers = [ctx.Process(target=_record_in_process, args=(str(path), 25)) for _ in range(3)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(60)
        assert worker.exitcode == 0
    (entry,) = RecallTracker(path).entries()
    assert entry.recall_count == 75
    assert entry.total_score == pytest.approx(37.5)
    assert len(entry.query_hashes) == 3


def test_back_to_back_recordings_wait_for_a_quiet_queue_and_flush_writes_them_at_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The writer holds recordings while searches keep coming (so it never competes with
    them for the cores), and a flush writes them without waiting for the quiet period."""
    monkeypatch.setattr(tracking, "QUIET_SECONDS", 30.0)
    monkeypatch.setattr(tracking, "MAX_DELAY_SECONDS", 60.0)
    path = tmp_path / "idx" / "recall-tracking.sqlite"
    tracker = RecallTracker(path)
    hit = MemorySearchResult(path="memory/a.md", start_line=1, end_line=3, score=0.5, snippet="x")
    for i in range(3):
        tracker.record_search(f"query {i}", [hit])
    assert tracker._pending == 3  # held: the queue has not been quiet for 30 s
    started = time.monotonic()
    assert tracker.flush(timeout=20)
    assert time.monotonic() - started < 20  # written at once, not after the quiet period
    (entry,) = tracker.entries()
    assert entry.recall_count == 3 and len(entry.query_hashes) == 3
    tracker.close()


def test_concept_tags_are_the_snippets_first_keywords_and_follow_a_changed_snippet(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    long_chinese = "部署流程" + "，服务监听端口八千零八十" * 200
    expected = [t for t in extract_keywords(long_chinese) if len(t) >= 3 or not t.isascii()]
    tags = tracking.concept_tags("memory/a.md", long_chinese)
    assert tags == expected[: tracking.MAX_CONCEPT_TAGS]
    tracker = RecallTracker(tmp_path / "recall-tracking.sqlite")
    computed: list[str] = []
    real = tracking.concept_tags

    def counting(path: str, snippet: str) -> list[str]:
        computed.append(snippet)
        return real(path, snippet)

    monkeypatch.setattr(tracking, "concept_tags", counting)

    def recall(snippet: str) -> list[str]:
        hit = MemorySearchResult(
            path="memory/a.md", start_line=1, end_line=2, score=0.5, snippet=snippet
        )
        tracker.record_search("billing", [hit])
        assert tracker.flush()
        (entry,) = tracker.entries()
        return entry.concept_tags

    assert recall("billing rate limit per minute") == ["billing", "rate", "limit", "per", "minute"]
    assert recall("billing rate limit per minute") == ["billing", "rate", "limit", "per", "minute"]
    assert len(computed) == 1  # the same snippet keeps the tags it gave
    assert recall("deploys happen on tuesdays") == ["deploys", "happen", "tuesdays"]
    assert len(computed) == 2
    tracker.close()


def test_one_job_counting_a_chunk_twice_counts_it_twice(tmp_path: Path) -> None:
    """Two searches of one batch that hit the same chunk (and one that hits another)."""
    tracker = RecallTracker(tmp_path / "recall-tracking.sqlite")
    a = MemorySearchResult(path="memory/a.md", start_line=1, end_line=2, score=0.4, snippet="a")
    b = MemorySearchResult(path="memory/b.md", start_line=5, end_line=9, score=0.9, snippet="b")
    tracker.record_searches([("first", [a]), ("second", [a, b])])
    tracker.record_searches([("third", [a])])
    assert tracker.flush()
    entries = {e.path: e for e in tracker.entries()}
    assert entries["memory/a.md"].recall_count == 3
    assert entries["memory/a.md"].total_score == pytest.approx(1.2)
    assert entries["memory/a.md"].query_hashes == [
        query_hash(q) for q in ("first", "second", "third")
    ]
    assert entries["memory/b.md"].recall_count == 1 and entries["memory/b.md"].max_score == 0.9
    tracker.close()


def test_a_batch_applies_searches_and_reads_in_the_order_they_came(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One batch: a search, a read that grounds its hit, another search. Grounding adds the
    mean score at the time of the read, so applying the read after both searches would give
    0.4 + 0.8 + 0.6 instead of 0.4 + 0.4 + 0.8."""
    monkeypatch.setattr(tracking, "QUIET_SECONDS", 30.0)
    monkeypatch.setattr(tracking, "MAX_DELAY_SECONDS", 60.0)
    tracker = RecallTracker(tmp_path / "recall-tracking.sqlite")
    hit = MemorySearchResult(path="memory/a.md", start_line=1, end_line=2, score=0.4, snippet="a")
    tracker.record_search("first", [hit])
    tracker.record_read(ReadFileResult(path="memory/a.md", text="a\nb\n"), 1, 2)
    tracker.record_search("second", [hit.model_copy(update={"score": 0.8})])
    assert tracker._pending == 3  # all three held for one batch
    assert tracker.flush(timeout=20)
    (entry,) = tracker.entries()
    assert entry.recall_count == 2 and entry.grounded_count == 1
    assert entry.total_score == pytest.approx(1.6)
    assert entry.max_score == 0.8
    tracker.close()


# -- promotion: a scripted recall history ranks exactly as the formula says -----------------

#: (query, day offset from NOW, hour) for each chunk's searches.
HISTORY: dict[str, list[tuple[str, int, int]]] = {
    "billing rate limit": [(q, d, 9) for q, d in [("a", -6), ("b", -4), ("c", -2), ("d", 0)]],
    "deploys production tuesdays": [(q, d, 10) for q, d in [("e", -3), ("f", -3), ("g", -1)]],
    "lunch pasta": [("h", 0, 11), ("h", 0, 12)],
}


def _expected(row: sqlite3.Row, now: datetime, cfg: PromotionSettings) -> dict[str, float]:
    """The reference's formula, computed here independently of memwell's code."""
    signals = row["recall_count"] + row["grounded_count"]
    days = sorted(datetime.fromisoformat(d).date() for d in json.loads(row["recall_days"]))
    hashes = json.loads(row["query_hashes"])
    last = datetime.fromisoformat(row["last_recalled_at"].replace("Z", "+00:00"))
    age = (now - last).total_seconds() / 86400
    if len(days) == 1:
        spread = 0.2
    else:
        spread = min(
            1.0,
            0.55 * min(1.0, math.log1p(len(days) - 1) / math.log1p(4))
            + 0.45 * min(1.0, (days[-1] - days[0]).days / 7),
        )
    parts = {
        "frequency": min(1.0, math.log1p(signals) / math.log1p(10)),
        "relevance": row["total_score"] / signals,
        "diversity": min(1.0, max(len(hashes), len(days)) / 5),
        "recency": 0.5 ** (age / cfg.recency_half_life_days),
        "consolidation": max(spread, min(1.0, row["grounded_count"] / 3)),
        "conceptual": min(1.0, len(json.loads(row["concept_tags"])) / 6),
    }
    weights = {
        "frequency": 0.24,
        "relevance": 0.30,
        "diversity": 0.15,
        "recency": 0.15,
        "consolidation": 0.10,
        "conceptual": 0.06,
    }
    parts["score"] = sum(weights[k] * parts[k] for k in weights)
    return parts


def _scripted_history(open_ws: OpenFn, ws: Path) -> MemorySearchManager:
    """Real searches through open_memory, at scripted times, then one grounded read."""
    memory = open_ws(ws, provider="none")
    assert isinstance(memory, RecallCachedManager) and memory.tracker is not None
    memory.sync()
    for text, searches in HISTORY.items():
        for variant, offset, hour in searches:
            moment = (NOW + timedelta(days=offset)).replace(hour=hour)
            memory.tracker._clock = lambda moment=moment: moment  # type: ignore[misc]
            hits = memory.search(f"{text} {variant}", min_score=0.0, max_results=1)
            assert hits, text
    memory.tracker._clock = lambda: NOW  # type: ignore[misc]
    memory.read_file("memory/2026-11-29.md", from_line=3, lines=1)  # grounds the deploy note
    return memory


def test_promote_dry_run_ranks_exactly_as_the_formula_says(open_ws: OpenFn, tmp_path: Path) -> None:
    ws = _daily_workspace(tmp_path / "ws")
    memory = _scripted_history(open_ws, ws)
    rows = {row["path"]: row for row in _sidecar_rows(ws, memory).values()}
    cfg = PromotionSettings(min_score=0.0)
    expected = {path: _expected(row, NOW, cfg) for path, row in rows.items()}
    assert rows["memory/2026-11-29.md"]["grounded_count"] == 1
    settings = MemwellSettings(provider="none", promotion=cfg)
    result = promote(memory, ws, settings, dry_run=True, clock=lambda: NOW)
    ranked = [c.path for c in result.candidates]
    # The lunch note has 2 recalls (below min_recall_count 3): gated out.
    assert ranked == sorted(
        (p for p in expected if p != "memory/2026-11-30.md"), key=lambda p: -expected[p]["score"]
    )
    for candidate in result.candidates:
        want = expected[candidate.path]
        assert candidate.score == pytest.approx(want["score"], abs=1e-9)
        for name, value in candidate.components.items():
            assert value == pytest.approx(want[name], abs=1e-9), name
    # The default gate (min_score 0.75) keeps only what scores that high.
    default = rank_candidates(memory.tracker.entries(), PromotionSettings(), NOW)  # type: ignore[union-attr]
    assert [c.path for c in default] == [p for p in ranked if expected[p]["score"] >= 0.75]
    assert (ws / "MEMORY.md").read_text() == "# Memory\n\nLong-term notes.\n"  # dry run


def test_promote_appends_once_not_twice(open_ws: OpenFn, tmp_path: Path) -> None:
    ws = _daily_workspace(tmp_path / "ws")
    memory = _scripted_history(open_ws, ws)
    settings = MemwellSettings(provider="none", promotion=PromotionSettings(min_score=0.5))
    first = promote(memory, ws, settings, clock=lambda: NOW)
    assert {c.path for c in first.appended} == {"memory/2026-11-28.md", "memory/2026-11-29.md"}
    text = (ws / "MEMORY.md").read_text()
    assert text.startswith("# Memory\n\nLong-term notes.\n")  # every other byte kept
    assert "## Promoted From Short-Term Memory (2026-12-02)" in text
    assert text.endswith(  # the facts, not the titles; no scores in the visible text
        "\n- The billing API rate limit is 100 requests per minute.\n"
        "- Deploys to production happen on Tuesdays after standup.\n"
    )
    assert "score" not in text and "<!--" not in text
    again = promote(memory, ws, settings, clock=lambda: NOW)
    assert again.appended == []
    assert (ws / "MEMORY.md").read_text() == text
    # Losing the sidecar loses no durable state: the markers keep MEMORY.md free of doubles.
    memory.close()
    (ws / ".memwell" / "recall-tracking.sqlite").unlink()
    memory = _scripted_history(open_ws, ws)
    third = promote(memory, ws, settings, clock=lambda: NOW)
    assert third.appended == [] and len(third.skipped) == 2
    assert (ws / "MEMORY.md").read_text() == text
    # The promoted snippets are now found in MEMORY.md by search, the index was synced.
    assert any(r.path == "MEMORY.md" for r in memory.search("billing rate limit", min_score=0.0))


def test_promote_cli_dry_run_prints_every_component(open_ws: OpenFn, tmp_path: Path) -> None:
    ws = _daily_workspace(tmp_path / "ws")
    memory = _scripted_history(open_ws, ws)
    # The CLI is another reader of the sidecar: wait for this process's queued recordings.
    assert isinstance(memory, RecallCachedManager) and memory.tracker is not None
    assert memory.tracker.flush()
    (ws / "memwell.toml").write_text("[promotion]\nmin_score = 0.0\n")
    runner = CliRunner()
    args = ["-w", str(ws), "--provider", "none", "promote", "--dry-run"]
    shown = runner.invoke(cli, args)
    assert shown.exit_code == 0, shown.output
    header = shown.output.splitlines()[0].split()
    assert header[:8] == ["#", "score", "freq", "relev", "divers", "recency", "consol", "concept"]
    assert "memory/2026-11-28.md:1-4" in shown.output
    data = json.loads(runner.invoke(cli, [*args, "--json"]).output)
    assert data["dry_run"] is True and len(data["candidates"]) == 2
    assert set(data["candidates"][0]["components"]) == {
        "frequency",
        "relevance",
        "diversity",
        "recency",
        "consolidation",
        "conceptual",
    }
    assert "Promoted" not in (ws / "MEMORY.md").read_text()
