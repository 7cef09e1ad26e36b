"""The pre-compaction flush plan: thresholds, once per cycle, prompts, shared state."""

from __future__ import annotations

import json
import threading
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
from memwell.agent.flush import (
    DEFAULT_SYSTEM_PROMPT,
    READ_ONLY_FILES,
    SILENT_TOKEN,
    ContextUsage,
    FileFlushState,
    MemoryFlushState,
    flush_prompt,
    flush_threshold,
    plan_flush,
    plan_from_arguments,
    plan_text,
)
from memwell.contract.config import FlushSettings, MemwellSettings

BERLIN = timezone(timedelta(hours=1), "CET")
NOW = datetime(2026, 3, 4, 23, 30, tzinfo=BERLIN)  # still March 4 locally, March 5 in UTC


def usage(tokens: int, window: int = 128_000, **extra: object) -> ContextUsage:
    return ContextUsage(tokens_used=tokens, context_window=window, **extra)


def test_reference_defaults_give_the_threshold() -> None:
    cfg = FlushSettings()
    assert (cfg.soft_threshold_tokens, cfg.reserve_tokens_floor) == (4000, 20_000)
    assert cfg.force_flush_transcript_bytes == 2 * 1024 * 1024
    assert flush_threshold(usage(0), cfg) == 128_000 - 20_000 - 4000
    assert flush_threshold(usage(0, reserve_tokens=30_000), cfg) == 128_000 - 30_000 - 4000
    assert flush_threshold(usage(0, reserve_tokens=5), cfg) == 104_000  # the floor wins


def test_below_the_threshold_no_flush_and_nothing_claimed() -> None:
    state = MemoryFlushState()
    plan = plan_flush(usage(103_999), state=state, now=NOW)
    assert not plan.flush and plan.target is None and plan.prompt is None
    assert "flush at 104000" in plan.reason
    assert plan_flush(usage(104_000), state=state, now=NOW).flush  # not claimed before


def test_past_the_threshold_the_plan_says_what_and_where() -> None:
    plan = plan_flush(usage(104_000), now=NOW)
    assert plan.flush and plan.target == "memory/2026-03-04.md"
    assert plan.system_prompt == DEFAULT_SYSTEM_PROMPT
    prompt = plan.prompt or ""
    assert "Store durable memories" in prompt and "memory/2026-03-04.md" in prompt
    assert "YYYY-MM-DD" not in prompt and "APPEND" in prompt and SILENT_TOKEN in prompt
    assert all(name in prompt for name in READ_ONLY_FILES)
    assert prompt.endswith("Current time: 2026-03-04 23:30 CET (UTC+0100)")


def test_once_per_compaction_cycle_and_per_session() -> None:
    state = MemoryFlushState()
    assert plan_flush(usage(110_000), state=state, session_key="a", now=NOW).flush
    again = plan_flush(usage(127_000), state=state, session_key="a", now=NOW)
    assert not again.flush and again.reason == "already flushed in compaction cycle 0"
    assert plan_flush(usage(110_000), state=state, session_key="b", now=NOW).flush
    next_cycle = usage(110_000, compaction_count=1)
    assert plan_flush(next_cycle, state=state, session_key="a", now=NOW).flush
    assert not plan_flush(next_cycle, state=state, session_key="a", now=NOW).flush


def test_a_large_transcript_forces_the_flush() -> None:
    forced = plan_flush(usage(0, transcript_bytes=2 * 1024 * 1024), now=NOW)
    assert forced.flush and "transcript is 2097152 bytes" in forced.reason
    assert not plan_flush(usage(0, transcript_bytes=2 * 1024 * 1024 - 1), now=NOW).flush


@pytest.mark.parametrize(
    ("plan_usage", "settings", "reason"),
    [
        (usage(200_000), FlushSettings(enabled=False), "disabled"),
        (usage(0), FlushSettings(), "no token count"),
        (usage(23_000, window=24_000), FlushSettings(), "not above the reserve"),
    ],
)
def test_no_flush_cases_say_why(
    plan_usage: ContextUsage, settings: FlushSettings, reason: str
) -> None:
    plan = plan_flush(plan_usage, settings=settings, now=NOW)
    assert not plan.flush and reason in plan.reason
    assert plan_text(plan).startswith("No memory flush needed now:")


def test_custom_prompt_gets_the_date_and_the_required_hints() -> None:
    cfg = FlushSettings(prompt="Save what matters to memory/YYYY-MM-DD.md.")
    assert flush_prompt(cfg, NOW).startswith("Save what matters to memory/2026-03-04.md. If")
    bare = flush_prompt(FlushSettings(prompt="Save what matters."), NOW)
    assert "memory/2026-03-04.md" in bare and SILENT_TOKEN in bare
    custom = plan_flush(usage(110_000), settings=FlushSettings(system_prompt="S."), now=NOW)
    assert custom.system_prompt == "S." and plan_text(custom).startswith("S.\n\n")


def test_file_state_is_shared_between_instances_and_survives_garbage(tmp_path: Path) -> None:
    path = tmp_path / "idx" / "flush-state.json"
    assert FileFlushState(path).claim("s", "3")
    assert not FileFlushState(path).claim("s", "3")
    assert FileFlushState(path).claim("s", "4")
    assert json.loads(path.read_text()) == {"s": "4"}
    path.write_text("{oops", encoding="utf-8")
    assert FileFlushState(path).claim("s", "4")  # unreadable state: started afresh
    assert json.loads(path.read_text()) == {"s": "4"}


def test_concurrent_claims_of_one_cycle_flush_exactly_once(tmp_path: Path) -> None:
    path = tmp_path / "flush-state.json"
    results: list[bool] = []
    barrier = threading.Barrier(8)

    def claim() -> None:
        barrier.wait()
        results.append(FileFlushState(path).claim("shared", "7"))

    threads = [threading.Thread(target=claim) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(results) == [False] * 7 + [True]


def test_state_for_a_workspace_lives_in_its_index_dir(tmp_path: Path) -> None:
    settings = MemwellSettings(index_dir=".idx")
    state = FileFlushState.for_workspace(tmp_path, settings)
    assert state.path == tmp_path / ".idx" / "flush-state.json"


def test_plan_from_string_arguments() -> None:
    state = MemoryFlushState()
    args = {"tokens_used": "110000", "context_window": "128000", "session_key": "k"}
    plan = plan_from_arguments(args, state=state, now=NOW)
    assert plan.flush and plan.session_key == "k" and plan.cycle == "0"
    assert not plan_from_arguments(args, state=state, now=NOW).flush
    assert plan_from_arguments({**args, "compaction_count": "c2"}, state=state, now=NOW).flush
    host = plan_from_arguments({}, state=state, now=NOW)
    assert host.flush and host.reason == "requested by the host"
    assert host.target == "memory/2026-03-04.md"
    with pytest.raises(ValueError, match="tokens_used must be an integer"):
        plan_from_arguments({"tokens_used": "lots", "context_window": "1"})
    with pytest.raises(ValueError, match="both tokens_used and context_window"):
        plan_from_arguments({"tokens_used": "5"})
