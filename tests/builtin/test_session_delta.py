"""Session-delta sync ([sync.sessions]) on the real builtin backend (SQLite FTS5)."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from memwell.contract.config import MemwellSettings
from memwell.contract.manager import MemorySearchManager
from memwell.curation import session_delta
from memwell.curation.session_delta import SessionDeltaTracker, after_compaction
from memwell.runtime.fallback import unwrap
from memwell.util.sync_gate import SyncGate
from memwell_sqlite.manager import SqliteMemoryManager
from memwell_sqlite.watcher import MemoryWatcher

OpenFn = Callable[..., MemorySearchManager]


def message(text: str, role: str = "user") -> str:
    return json.dumps({"type": "message", "message": {"role": role, "content": text}}) + "\n"


def settings_with(delta_bytes: int, delta_messages: int, **sessions: object) -> MemwellSettings:
    return MemwellSettings.model_validate(
        {
            "sources": ["memory", "sessions"],
            "sync": {
                "sessions": {
                    "delta_bytes": delta_bytes,
                    "delta_messages": delta_messages,
                    **sessions,
                }
            },
        }
    )


class Recorder:
    def __init__(self) -> None:
        self.reasons: list[str] = []

    def __call__(self, reason: str) -> None:
        self.reasons.append(reason)


def test_below_both_thresholds_no_sync(tmp_path: Path) -> None:
    transcript = tmp_path / "t.jsonl"
    transcript.write_text("")
    sync = Recorder()
    tracker = SessionDeltaTracker(settings_with(10_000, 5), sync=sync)
    for i in range(4):  # 4 messages, a few hundred bytes: under 5 messages and 10,000 bytes
        with transcript.open("a") as fh:
            fh.write(message(f"line {i}"))
        assert tracker.transcripts_updated([transcript]) == []
    assert sync.reasons == []
    state = tracker.files[transcript]
    assert state.pending_messages == 4 and state.pending_bytes == transcript.stat().st_size


def test_crossing_the_message_threshold_syncs_and_carries_the_remainder(tmp_path: Path) -> None:
    transcript = tmp_path / "t.jsonl"
    transcript.write_text("")
    sync = Recorder()
    tracker = SessionDeltaTracker(settings_with(10_000_000, 3), sync=sync)
    with transcript.open("a") as fh:
        fh.write(message("a") + message("b"))
    assert tracker.transcripts_updated([transcript]) == []
    with transcript.open("a") as fh:
        fh.write(message("c") + message("d"))
    assert tracker.transcripts_updated([transcript]) == [transcript]
    assert sync.reasons == ["session-delta"]
    assert tracker.files[transcript].pending_messages == 1  # 4 - 3 carries over


def test_crossing_the_byte_threshold_syncs(tmp_path: Path) -> None:
    transcript = tmp_path / "t.jsonl"
    transcript.write_text("")
    sync = Recorder()
    tracker = SessionDeltaTracker(settings_with(500, 1000), sync=sync)
    with transcript.open("a") as fh:
        fh.write(message("x" * 600))  # one message, 600+ bytes
    assert tracker.transcripts_updated([transcript]) == [transcript]
    assert sync.reasons == ["session-delta"]


def test_a_rewritten_transcript_counts_whole(tmp_path: Path) -> None:
    transcript = tmp_path / "t.jsonl"
    transcript.write_text(message("a") * 3)
    tracker = SessionDeltaTracker(settings_with(0, 100), sync=Recorder())
    tracker.synced([transcript])
    transcript.write_text(message("b"))  # shorter: rewritten (e.g. compacted)
    assert tracker.transcripts_updated([transcript]) == [transcript]  # 0 bytes: any growth


def _workspace(root: Path) -> Path:
    (root / "sessions").mkdir(parents=True)
    (root / "MEMORY.md").write_text("# Memory\n\nNothing yet.\n")
    (root / "sessions" / "main.jsonl").write_text(message("hello there"))
    return root


def _paths(memory: MemorySearchManager, query: str) -> set[str]:
    return {hit.path for hit in memory.search(query, min_score=0.0)}


def test_a_hit_runs_a_sessions_only_sync_on_the_builtin_backend(
    open_ws: OpenFn, tmp_path: Path
) -> None:
    ws = _workspace(tmp_path / "ws")
    memory = open_ws(
        ws,
        provider="none",
        sources=["memory", "sessions"],
        sync={"sessions": {"delta_bytes": 100_000, "delta_messages": 2}},
        cache={"recall": {"enabled": False}},
    )
    backend = unwrap(memory)
    assert isinstance(backend, SqliteMemoryManager) and backend.session_deltas is not None
    memory.sync()
    deltas = backend.session_deltas
    transcript = ws / "sessions" / "main.jsonl"
    # A memory edit that a sessions-only sync must leave alone:
    (ws / "MEMORY.md").write_text("# Memory\n\nquixotic marmalade protocol.\n")
    with transcript.open("a") as fh:
        fh.write(message("the zebra migration starts Friday"))
    assert deltas.transcripts_updated([transcript]) == []  # one message: below both
    assert "sessions/main.jsonl" not in _paths(memory, "zebra migration")
    with transcript.open("a") as fh:
        fh.write(message("bring the binoculars", role="assistant"))
    assert deltas.transcripts_updated([transcript]) == [transcript]  # two: a hit
    assert "sessions/main.jsonl" in _paths(memory, "zebra migration")
    assert "MEMORY.md" not in _paths(memory, "quixotic marmalade")  # sessions only
    assert deltas.files[transcript].pending_messages == 0  # reset by the sync
    memory.sync()  # an ordinary sync still picks the memory edit up
    assert "MEMORY.md" in _paths(memory, "quixotic marmalade")


def test_post_compaction_force_forces_a_sync(open_ws: OpenFn, tmp_path: Path) -> None:
    ws = _workspace(tmp_path / "ws")
    overrides = {
        "provider": "none",
        "sources": ["memory", "sessions"],
        "cache": {"recall": {"enabled": False}},
    }
    memory = open_ws(ws, **overrides)
    memory.sync()
    transcript = ws / "sessions" / "main.jsonl"
    transcript.write_text(message("compacted summary: the walrus budget is approved"))
    settings = MemwellSettings.model_validate(overrides)
    assert after_compaction(memory, settings) is True
    assert "sessions/main.jsonl" in _paths(memory, "walrus budget")
    off = settings.model_copy(
        update={
            "sync": settings.sync.model_copy(
                update={
                    "sessions": settings.sync.sessions.model_copy(
                        update={"post_compaction_force": False}
                    )
                }
            )
        }
    )
    transcript.write_text(message("compacted again: the narwhal plan"))
    assert after_compaction(memory, off) is False
    assert "sessions/main.jsonl" not in _paths(memory, "narwhal plan")


def test_the_watcher_routes_transcript_growth_to_the_tracker(
    open_ws: OpenFn, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(session_delta, "DEBOUNCE_SECONDS", 0.2)
    ws = _workspace(tmp_path / "ws")
    memory = open_ws(
        ws,
        provider="none",
        sources=["memory", "sessions"],
        sync={"watch": True, "watch_debounce_ms": 100, "sessions": {"delta_messages": 1}},
        cache={"recall": {"enabled": False}},
    )
    memory.sync()
    backend = unwrap(memory)
    assert isinstance(backend, SqliteMemoryManager) and backend.session_deltas is not None
    with (ws / "sessions" / "main.jsonl").open("a") as fh:
        fh.write(message("the okapi arrives on Monday"))
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline:
        if "sessions/main.jsonl" in _paths(memory, "okapi arrives"):
            break
        time.sleep(0.2)
    else:
        pytest.fail("the transcript's growth never reached the index")
    assert backend.dirty is False  # a transcript write does not mark memory dirty


def test_watched_appends_below_the_threshold_stay_unindexed_through_their_close(
    open_ws: OpenFn, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A normal writer opens, appends and closes: the ``closed`` event watchdog sends on
    Linux must not sync a transcript below its thresholds either (issue 38 item 8)."""
    monkeypatch.setattr(session_delta, "DEBOUNCE_SECONDS", 0.2)
    ws = _workspace(tmp_path / "ws")
    memory = open_ws(
        ws,
        provider="none",
        sources=["memory", "sessions"],
        sync={
            "watch": True,
            "watch_debounce_ms": 100,
            "sessions": {"delta_messages": 3, "delta_bytes": 1_000_000},
        },
        cache={"recall": {"enabled": False}},
    )
    memory.sync()
    backend = unwrap(memory)
    assert isinstance(backend, SqliteMemoryManager) and backend.session_deltas is not None
    deltas = backend.session_deltas
    transcript = ws / "sessions" / "main.jsonl"
    syncs: list[str] = []
    sync = backend.sync
    monkeypatch.setattr(backend, "sync", lambda **kw: (syncs.append(kw["reason"]), sync(**kw)))

    def pending() -> int | None:
        state = deltas.files.get(transcript)
        return None if state is None else state.pending_messages

    def wait_for(check: Callable[[], bool], what: str) -> None:
        deadline = time.monotonic() + 15
        while not check():
            if time.monotonic() > deadline:
                pytest.fail(f"timed out waiting for {what} (syncs: {syncs})")
            time.sleep(0.05)

    for n, text in enumerate(["the okapi arrives on Monday", "bring the kelp"], start=1):
        with transcript.open("a") as fh:  # append and close, as a transcript writer does
            fh.write(message(text))
        wait_for(lambda n=n: pending() == n, f"message {n}")
        time.sleep(0.5)  # several watch debounce windows: a close-triggered sync would run
        assert syncs == [] and pending() == n
        assert "sessions/main.jsonl" not in _paths(memory, "okapi arrives")
    with transcript.open("a") as fh:
        fh.write(message("the third message crosses the threshold"))
    wait_for(lambda: "sessions/main.jsonl" in _paths(memory, "okapi arrives"), "the delta sync")
    assert syncs == ["session-delta"] and pending() == 0


def test_the_gate_widens_a_sessions_only_request_joined_by_a_full_one() -> None:
    gate = SyncGate()
    scopes: list[frozenset[str] | None] = []
    inside, release = threading.Event(), threading.Event()

    def scan(force: bool, sources: frozenset[str] | None) -> None:
        scopes.append(sources)
        if len(scopes) == 1:
            inside.set()
            release.wait(10)

    first = threading.Thread(
        target=gate.run, args=(scan,), kwargs={"sources": frozenset({"sessions"})}
    )
    first.start()
    assert inside.wait(10)
    waiters = [
        threading.Thread(
            target=gate.run, args=(scan,), kwargs={"sources": frozenset({"sessions"})}
        ),
        threading.Thread(target=gate.run, args=(scan,)),
    ]
    for thread in waiters:
        thread.start()
    time.sleep(0.2)
    release.set()
    for thread in [first, *waiters]:
        thread.join(10)
    assert scopes == [frozenset({"sessions"}), None]
    gate.run(scan, sources=frozenset({"sessions"}))
    assert scopes[-1] == frozenset({"sessions"})


def test_the_watcher_hands_reference_layout_transcripts_to_the_tracker(tmp_path: Path) -> None:
    """Issue 40 item 13: ``<sessionKey>/transcripts/*.jsonl`` grow like flat transcripts."""
    root = (tmp_path / "sessions").resolve()
    grown: list[Path] = []
    watcher = MemoryWatcher(
        tmp_path, [root], lambda: None, lambda: None, 0.1, transcripts=(root, grown.append)
    )
    flat, nested = root / "main.jsonl", root / "agent-main" / "transcripts" / "t1.jsonl"
    elsewhere = [root / "agent-main" / "t1.jsonl", root / "a" / "b" / "transcripts" / "t.jsonl"]
    assert watcher.grew(flat) and watcher.grew(nested)
    assert not any(watcher.grew(path) for path in [*elsewhere, tmp_path / "other.jsonl"])
    assert grown == [flat, nested]
