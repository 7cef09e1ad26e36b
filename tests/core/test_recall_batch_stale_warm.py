"""Batch search that shares one retrieval among near-duplicates, stale answers served at once
and refreshed in the background, and time-of-day warm-up from the query log."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator, Sequence
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
from memwell.cli.main import main as cli_main
from memwell.contract.config import MemwellSettings
from memwell.contract.errors import MemwellError
from memwell.contract.models import MemorySearchResult
from memwell.curation.tracking import RecallTracker
from memwell.recall import manager as recall_manager
from memwell.recall.manager import RecallCachedManager
from memwell.recall.warmup import period_of
from memwell.runtime.factory import close_all
from test_recall_cache import Backend, Clock, Embedder, cached


def test_near_duplicates_of_a_batch_share_one_retrieval_and_answer_as_one_by_one() -> None:
    queries = ["deploy checklist", "Deploy checklist?", "deploy  checklist", "staging hosts"]
    queries += ["DEPLOY CHECKLIST", "staging hosts"]
    backend = Backend(embedder=Embedder())
    memory = cached(backend, Clock())
    batch = memory.search_many(queries)
    assert backend.batches == [["deploy checklist", "staging hosts"]]
    stats = memory.status().recall_cache
    assert stats is not None and (stats.backend_searches, stats.batch_shared) == (2, 4)

    one_by_one = Backend(embedder=Embedder())
    sequential = cached(one_by_one, Clock())
    assert batch == [sequential.search(q) for q in queries]
    assert one_by_one.calls == ["deploy checklist", "staging hosts"]


def test_without_an_embedder_only_the_same_normalised_text_is_shared() -> None:
    backend = Backend()
    memory = cached(backend, Clock())
    answers = memory.search_many(["a b", "a  b", "A b", " a b "])
    assert backend.batches == [["a b", "A b"]]
    assert answers[0] == answers[1] == answers[3] != answers[2]


def test_boolean_queries_never_share_with_a_similar_query() -> None:
    backend = Backend(embedder=Embedder())
    memory = cached(backend, Clock())
    memory.search_many(["deploy checklist", "deploy checklist +staging"])
    assert backend.batches == [["deploy checklist", "deploy checklist +staging"]]


def snippet(results: Sequence[MemorySearchResult]) -> str:
    return results[0].snippet.split(" ")[-2]


def test_a_stale_answer_comes_at_once_and_is_refreshed_in_the_background() -> None:
    clock = Clock()
    backend = Backend()
    memory = cached(backend, clock)
    assert snippet(memory.search("q")) == "@v1"
    backend.sync()  # the index changed: the cached answer is stale
    assert snippet(asyncio.run(memory.async_search("q", stale_ok=True))) == "@v1"
    assert memory.wait_for_refreshes(10)
    assert backend.calls == ["q", "q"]
    assert snippet(asyncio.run(memory.async_search("q", stale_ok=True))) == "@v2"
    assert backend.calls == ["q", "q"]  # fresh now: no refresh
    clock.now += 4000  # past the exact tier's hour
    assert snippet(asyncio.run(memory.async_search("q", stale_ok=True))) == "@v2"
    assert memory.wait_for_refreshes(10) and backend.calls == ["q", "q", "q"]
    stats = memory.status().recall_cache
    assert stats is not None and stats.stale_served == 2


def test_without_stale_ok_or_a_former_answer_the_search_is_awaited() -> None:
    backend = Backend()
    memory = cached(backend, Clock())
    assert snippet(asyncio.run(memory.async_search("new", stale_ok=True))) == "@v1"
    backend.sync()
    assert snippet(asyncio.run(memory.async_search("new"))) == "@v2"
    assert backend.calls == ["new", "new"]


class SlowBackend(Backend):
    """Blocks the searches after the first until released."""

    def __init__(self) -> None:
        super().__init__()
        self.release = threading.Event()

    def search(self, query: str, **kwargs: object) -> list[MemorySearchResult]:  # type: ignore[override]
        if self.calls:
            self.release.wait(10)
        return super().search(query)


def test_one_refresh_at_a_time_per_query() -> None:
    backend = SlowBackend()
    memory = cached(backend, Clock())
    memory.search("q")
    backend.sync()

    async def three() -> list[list[MemorySearchResult]]:
        return [await memory.async_search("q", stale_ok=True) for _ in range(3)]

    assert [snippet(r) for r in asyncio.run(three())] == ["@v1"] * 3
    backend.release.set()
    assert memory.wait_for_refreshes(10)
    assert backend.calls == ["q", "q"]


# -- time-of-day warm-up -------------------------------------------------------------------

TZ = timezone(timedelta(hours=2))
SECRET = "ghp_" + "a1B2c3D4e5" * 4


class Moment:
    def __init__(self) -> None:
        self.now = datetime(2026, 11, 2, 8, 0, tzinfo=TZ)

    def __call__(self) -> datetime:
        return self.now


@pytest.fixture
def history(tmp_path: Path) -> Iterator[RecallTracker]:
    """Standup notes on three mornings (once in capitals), the deploy checklist on one, a
    secret-shaped query on three, dinner plans on two evenings, a search without hits."""
    moment = Moment()
    tracker = RecallTracker(tmp_path / "recall.sqlite", clock=moment)
    hit = [MemorySearchResult(path="memory/a.md", start_line=1, end_line=1, score=0.5, snippet="x")]
    asked = [
        ("2026-11-02 08:10", "standup notes"),
        ("2026-11-02 09:00", "deploy checklist"),
        ("2026-11-02 08:30", f"why was {SECRET} revoked"),
        ("2026-11-03 07:50", "standup notes"),
        ("2026-11-03 07:55", "standup notes"),
        ("2026-11-03 08:30", f"why was {SECRET} revoked"),
        ("2026-11-04 10:00", "Standup  notes"),
        ("2026-11-04 08:30", f"why was {SECRET} revoked"),
        ("2026-11-04 11:00", "empty answer"),
        ("2026-11-05 11:00", "empty answer"),
        ("2026-11-02 19:00", "dinner plans"),
        ("2026-11-04 18:30", "dinner plans"),
    ]
    for stamp, query in asked:
        moment.now = datetime.strptime(stamp, "%Y-%m-%d %H:%M").replace(tzinfo=TZ)
        tracker.record_search(query, [] if query == "empty answer" else hit)
    yield tracker
    tracker.close()


def warmed(tracker: RecallTracker | None) -> tuple[RecallCachedManager, Backend]:
    backend = Backend()
    manager = RecallCachedManager(backend, MemwellSettings(), clock=Clock(), tracker=tracker)  # type: ignore[arg-type]
    return manager, backend


def test_the_morning_loads_what_mornings_usually_ask(history: RecallTracker) -> None:
    logged = len(history.asked(range(24)))
    entries = {e.key: e.recall_count for e in history.entries()}
    memory, backend = warmed(history)
    done = memory.warm_for("morning")
    assert [(u.query, u.days, u.times) for u in done.queries] == [("Standup  notes", 3, 4)]
    assert done.cached == 1 and backend.calls == ["Standup  notes"]
    memory.search("Standup notes")  # the morning's first search is a cache hit
    assert backend.calls == ["Standup  notes"]
    assert len(history.asked(range(24))) == logged + 1  # that search, not the warm-up
    recalls = {e.key: e.recall_count for e in history.entries()}
    assert recalls == {**entries, "memory:MEMORY.md:1:1": 1}  # the search's hit, once
    assert [u.query for u in memory.warm_for("evening").queries] == ["dinner plans"]
    assert memory.warm_for("night").queries == []


def test_secret_shaped_queries_are_never_logged(history: RecallTracker) -> None:
    logged = [a.query for a in history.asked(range(24))]
    assert logged and not any(SECRET in q for q in logged)
    assert "empty answer" not in logged


def test_warm_up_needs_a_history_and_a_part_of_the_day(history: RecallTracker) -> None:
    memory, _ = warmed(history)
    with pytest.raises(ValueError, match="morning, afternoon, evening, night"):
        memory.warm_for("brunch")
    with pytest.raises(MemwellError, match="recall_tracking"):
        warmed(None)[0].warm_for("morning")


def test_a_new_session_warms_for_the_part_of_the_day_when_asked(
    history: RecallTracker, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(recall_manager, "period_of", lambda moment: "evening")
    backend = Backend()
    settings = MemwellSettings.model_validate({"cache": {"recall": {"warm_on_session": True}}})
    memory = RecallCachedManager(backend, settings, clock=Clock(), tracker=history)  # type: ignore[arg-type]
    memory.search("anything", session_key="s1")
    memory.search("anything else", session_key="s1")  # the session is warm already
    assert backend.calls == ["dinner plans", "anything", "anything else"]
    off, off_backend = warmed(history)
    off.search("anything", session_key="s1")
    assert off_backend.calls == ["anything"]


@pytest.mark.parametrize(
    ("hour", "period"),
    [
        (5, "morning"),
        (11, "morning"),
        (12, "afternoon"),
        (21, "evening"),
        (22, "night"),
        (4, "night"),
    ],
)
def test_parts_of_the_day(hour: int, period: str) -> None:
    assert period_of(datetime(2026, 1, 1, hour, tzinfo=TZ)) == period


def test_memwell_warm_for_the_morning(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    ws = tmp_path / "ws"
    (ws / "memory").mkdir(parents=True)
    (ws / "memory" / "standup.md").write_text("Standup notes: ship the billing fix.\n")
    (ws / "memwell.toml").write_text(
        'provider = "none"\n[sync]\nwatch = false\n[cache.recall]\nquery_log = true\n'
    )
    moment = Moment()
    logging = MemwellSettings.model_validate({"cache": {"recall": {"query_log": True}}})
    off = RecallTracker.for_workspace(ws, MemwellSettings(), clock=moment)
    assert not off.log_queries, "queries are not logged unless asked for"
    off.close()
    tracker = RecallTracker.for_workspace(ws, logging, clock=moment)
    hit = [
        MemorySearchResult(path="memory/standup.md", start_line=1, end_line=1, score=1, snippet="x")
    ]
    for day in (2, 3):
        moment.now = datetime(2026, 11, day, 8, 30, tzinfo=TZ)
        tracker.record_search("standup notes", hit)
    tracker.close()
    try:
        cli_main(["-w", str(ws), "warm", "--for", "morning"])
    finally:
        close_all()
    out = capsys.readouterr().out
    assert "morning: 1 usual queries, 1 answers cached" in out
    assert "standup notes  (asked on 2 days, 2 times)" in out
    with pytest.raises(SystemExit):
        cli_main(["-w", str(ws), "warm", "--for", "brunch"])
