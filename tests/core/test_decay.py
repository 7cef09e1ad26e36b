from __future__ import annotations

import math
from collections.abc import Callable
from datetime import date, datetime, timedelta, timezone

import pytest
from hypothesis import given
from hypothesis import strategies as st
from memwell.retrieval.candidate import Candidate
from memwell.retrieval.decay import (
    apply_temporal_decay,
    date_from_path,
    decay_multiplier,
    is_evergreen,
)

NOW = datetime(2026, 3, 1, tzinfo=timezone.utc)
DAY = 86_400.0


def hit(path: str, score: float, source: str = "memory") -> Candidate:
    return Candidate(
        id=f"{source}:{path}",
        path=path,
        start_line=1,
        end_line=1,
        text="t",
        source=source,
        score=score,
    )


def no_mtime(path: str) -> float | None:
    raise AssertionError(f"mtime_of must not be called for {path}")


def days_ago(days: float) -> float:
    return NOW.timestamp() - days * DAY


def decay(
    items: list[Candidate], mtime_of: Callable[[str], float | None] = no_mtime
) -> list[Candidate]:
    return apply_temporal_decay(items, half_life_days=30, now=NOW, mtime_of=mtime_of)


def test_decay_formula() -> None:
    assert decay_multiplier(10, 30) == pytest.approx(math.exp(-math.log(2) / 30 * 10))
    assert decay_multiplier(30, 30) == pytest.approx(0.5)
    assert decay_multiplier(60, 30) == pytest.approx(0.25)
    assert decay_multiplier(0, 30) == 1.0


@pytest.mark.parametrize(("age", "half_life"), [(-5, 30), (10, 0), (10, -1), (float("nan"), 30)])
def test_decay_multiplier_no_boost_and_invalid_inputs(age: float, half_life: float) -> None:
    assert decay_multiplier(age, half_life) == 1.0


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        ("memory/2026-01-15.md", date(2026, 1, 15)),
        ("extra/memory/2024-02-29.md", date(2024, 2, 29)),
        ("memory\\2026-01-15.md", date(2026, 1, 15)),
        ("memory/2026-02-30.md", None),
        ("memory/2025-02-29.md", None),
        ("memory/2026-13-01.md", None),
        ("memory/2026-1-15.md", None),
        ("xmemory/2026-01-15.md", None),
        ("memory/2026-01-15.md.bak", None),
        ("memory/notes/2026-01-15.txt", None),
        ("MEMORY.md", None),
        # Session notes and dated notes in subdirectories date from their names.
        ("memory/2026-01-15-api-design.md", date(2026, 1, 15)),
        ("memory/2026-01-15-api-design-2.md", date(2026, 1, 15)),
        ("memory/projects/2026-01-15.md", date(2026, 1, 15)),
        ("memory/projects/2026-01-15 retro.md", date(2026, 1, 15)),
        ("memory/a/b/2026-01-15_notes.md", date(2026, 1, 15)),
        ("memory/2026-02-30-slug.md", None),
        ("memory/2026-01-151.md", None),
        ("memory/2026-01-15/notes.md", None),
        ("memory/projects/notes-2026-01-15.md", None),
        ("notes/2026-01-15-api.md", None),
    ],
)
def test_date_from_path(path: str, expected: date | None) -> None:
    assert date_from_path(path) == expected


@pytest.mark.parametrize(
    ("path", "source", "expected"),
    [
        ("MEMORY.md", "memory", True),
        ("memory.md", "memory", True),
        ("memory/projects.md", "memory", True),
        ("./memory/team/people.md", "memory", True),
        ("memory/2026-01-15.md", "memory", False),
        ("memory/2026-02-30.md", "memory", False),
        ("memory/2026-01-15-api-design.md", "memory", False),
        ("memory/team/2026-01-15.md", "memory", False),
        ("memory/2026-01-15/notes.md", "memory", True),
        ("notes/ideas.md", "memory", False),
        ("docs/MEMORY.md", "memory", False),
        ("MEMORY.md", "sessions", False),
        ("memory/projects.md", "sessions", False),
    ],
)
def test_is_evergreen(path: str, source: str, expected: bool) -> None:
    assert is_evergreen(path, source) is expected


def test_dated_path_decays_from_utc_midnight() -> None:
    [out] = decay([hit("memory/2026-01-30.md", 0.8)])
    assert out.score == pytest.approx(0.4)


def test_evergreen_files_are_not_decayed_and_mtime_not_read() -> None:
    items = [hit("MEMORY.md", 0.9), hit("memory/projects.md", 0.7)]
    assert [c.score for c in decay(items)] == [0.9, 0.7]


def test_new_hit_beats_old_after_decay() -> None:
    items = [hit("memory/2025-12-31.md", 0.95), hit("memory/2026-03-01.md", 0.8)]
    ranked = sorted(decay(items), key=lambda c: c.score, reverse=True)
    assert [c.path for c in ranked] == ["memory/2026-03-01.md", "memory/2025-12-31.md"]
    assert ranked[0].score == pytest.approx(0.8)


def test_future_dates_are_not_boosted() -> None:
    [out] = decay([hit("memory/2026-06-01.md", 0.6)])
    assert out.score == 0.6


def test_very_old_scores_vanish() -> None:
    [out] = decay([hit("memory/2016-03-01.md", 1.0)])
    assert 0.0 < out.score < 0.001


def test_mtime_is_used_for_non_memory_sources_and_extra_paths() -> None:
    items = [hit("sessions/abc.jsonl", 0.8, source="sessions"), hit("notes/ideas.md", 0.6)]
    out = decay(items, mtime_of=lambda _path: days_ago(30))
    assert [c.score for c in out] == pytest.approx([0.4, 0.3])


def test_invalid_dated_path_falls_back_to_mtime() -> None:
    [out] = decay([hit("memory/2026-02-30.md", 0.8)], mtime_of=lambda _path: days_ago(60))
    assert out.score == pytest.approx(0.2)


def test_missing_mtime_means_no_decay() -> None:
    [out] = decay([hit("sessions/gone.jsonl", 0.7, source="sessions")], mtime_of=lambda _p: None)
    assert out.score == 0.7


def test_timestamp_lookups_are_cached_per_source_and_path() -> None:
    calls: list[str] = []

    def mtime_of(path: str) -> float | None:
        calls.append(path)
        return days_ago(1)

    items = [
        hit("notes/a.md", 0.5),
        hit("notes/a.md", 0.4),
        hit("notes/a.md", 0.3, source="sessions"),
        hit("notes/b.md", 0.2),
    ]
    decay(items, mtime_of=mtime_of)
    assert calls == ["notes/a.md", "notes/a.md", "notes/b.md"]


def test_naive_now_is_utc_and_inputs_are_not_mutated() -> None:
    items = [hit("memory/2026-01-30.md", 0.8)]
    out = apply_temporal_decay(
        items,
        half_life_days=30,
        now=NOW.replace(tzinfo=None),
        mtime_of=no_mtime,
    )
    assert out[0].score == pytest.approx(0.4)
    assert items[0].score == 0.8
    assert out[0].path == items[0].path
    assert out[0].source == items[0].source


def test_aware_now_in_other_timezone() -> None:
    tokyo = timezone(timedelta(hours=9))
    now = datetime(2026, 3, 1, 9, 0, tzinfo=tokyo)
    [out] = apply_temporal_decay(
        [hit("memory/2026-01-30.md", 0.8)], half_life_days=30, now=now, mtime_of=no_mtime
    )
    assert out.score == pytest.approx(0.4)


def test_session_note_decays_by_its_name_not_its_mtime() -> None:
    # Written today (mtime now) but named for a session 30 days ago: decays to half.
    [out] = decay([hit("memory/2026-01-30-api-design.md", 0.8)])
    assert out.score == pytest.approx(0.4)


@given(
    day=st.dates(min_value=date(1970, 1, 1), max_value=date(9999, 12, 31)),
    subdirs=st.lists(st.from_regex(r"[a-z][a-z0-9 _-]{0,8}", fullmatch=True), max_size=2),
    rest=st.one_of(st.just(""), st.from_regex(r"[-_ .a-z][a-z0-9 ._-]{0,20}", fullmatch=True)),
)
def test_any_dated_name_under_memory_dates_from_its_name(
    day: date, subdirs: list[str], rest: str
) -> None:
    path = "/".join(["memory", *subdirs, f"{day.isoformat()}{rest}.md"])
    assert date_from_path(path) == day
    assert not is_evergreen(path, "memory")
