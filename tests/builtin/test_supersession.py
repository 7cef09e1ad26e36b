"""Supersession through every write channel on the builtin backend, and in search."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timezone
from pathlib import Path

import pytest
from memwell.agent.session_capture import save_session
from memwell.agent.write_tools import memory_supersede, memory_write
from memwell.contract.config import MemwellSettings
from memwell.contract.manager import MemorySearchManager
from memwell.registry.plugins import PluginRegistry
from memwell.retrieval.supersede_marker import parse_superseded
from memwell.runtime.fallback import unwrap
from memwell.writing import MemoryWriter

OpenFn = Callable[..., MemorySearchManager]
JUNE = datetime(2026, 6, 3, 9, 30, tzinfo=timezone.utc)
OLD = "- The staging database listens on port 5432."
NEIGHBOURS = "- The production database listens on port 5433.\n- Log retention is 21 days.\n"


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    (root / "memory").mkdir(parents=True)
    (root / "memory/2026-03-02.md").write_bytes(
        f"# 2026-03-02\n\n{OLD}\r\n{NEIGHBOURS}- The launch deadline is March 21.\n".encode()
    )
    return root


def open_writer(open_ws: OpenFn, ws: Path, mode: str = "auto") -> MemoryWriter:
    memory = open_ws(ws, provider="none")
    memory.sync(reason="test")
    settings = MemwellSettings.model_validate({"write": {"supersede": mode}})
    return MemoryWriter(memory, ws, settings, clock=lambda: JUNE)


def test_append_marks_the_older_line_and_keeps_every_other_byte(open_ws: OpenFn, ws: Path) -> None:
    before = (ws / "memory/2026-03-02.md").read_bytes()
    writer = open_writer(open_ws, ws)
    result = writer.append("The staging database now listens on port 6432.")
    assert result.path == "memory/2026-06-03.md" and result.start_line == 3
    [item] = result.superseded
    assert (item.path, item.line, item.text, item.by, item.marked) == (
        "memory/2026-03-02.md",
        3,
        OLD,
        "memory/2026-06-03.md#L3",
        True,
    )
    assert (item.attribute, item.old_value, item.new_value) == ("port", "5432", "6432")
    after = (ws / "memory/2026-03-02.md").read_bytes()
    suffix = b" *(superseded 2026-06-03 by memory/2026-06-03.md#L3)*"
    assert after == before.replace(OLD.encode() + b"\r\n", OLD.encode() + suffix + b"\r\n")
    marked_line = after.decode().split("\n")[2]
    parsed = parse_superseded(marked_line.rstrip("\r"))
    assert parsed is not None and parsed.original == OLD


def test_look_alikes_are_never_marked(open_ws: OpenFn, ws: Path) -> None:
    before = (ws / "memory/2026-03-02.md").read_bytes()
    writer = open_writer(open_ws, ws)
    for note in (
        "The staging cache listens on port 6379.",
        "The production database replica listens on port 6432.",
        "The launch deadline for the mobile app is March 28.",
        "Backup retention is 30 days.",
    ):
        assert writer.append(note).superseded == []
    assert (ws / "memory/2026-03-02.md").read_bytes() == before


def test_suggest_lists_without_marking_and_off_does_neither(open_ws: OpenFn, ws: Path) -> None:
    before = (ws / "memory/2026-03-02.md").read_bytes()
    suggested = open_writer(open_ws, ws, "suggest").append("The staging database uses port 6432.")
    assert [(s.line, s.marked) for s in suggested.superseded] == [(3, False)]
    off = open_writer(open_ws, ws, "off").append("The staging database uses port 7432.")
    assert off.superseded == []
    assert (ws / "memory/2026-03-02.md").read_bytes() == before


def test_a_second_update_marks_the_middle_fact_not_the_marked_one(
    open_ws: OpenFn, ws: Path
) -> None:
    writer = open_writer(open_ws, ws)
    writer.append("The staging database now listens on port 6432.")
    second = writer.append("The staging database now listens on port 7432.")
    assert [(s.path, s.line) for s in second.superseded] == [("memory/2026-06-03.md", 3)]
    daily = (ws / "memory/2026-06-03.md").read_text().splitlines()
    assert daily[2].endswith("*(superseded 2026-06-03 by memory/2026-06-03.md#L5)*")
    assert parse_superseded(daily[4]) is None


def test_memory_write_tool_reports_what_it_marked(open_ws: OpenFn, ws: Path) -> None:
    payload = memory_write(
        open_writer(open_ws, ws), {"text": "- Staging database moved to port 6432"}
    )
    assert payload["written"] is True
    assert [(s["path"], s["line"], s["marked"]) for s in payload["superseded"]] == [
        ("memory/2026-03-02.md", 3, True)
    ]


def test_explicit_supersede_marks_the_named_line(open_ws: OpenFn, ws: Path) -> None:
    writer = open_writer(open_ws, ws)
    payload = memory_supersede(
        writer,
        {
            "path": "memory/2026-03-02.md",
            "old_text": "Log retention is 21 days",
            "new_text": "Logs are now deleted after two weeks.",
        },
    )
    assert payload["written"] is True and payload["operation"] == "supersede"
    assert payload["superseded"][0]["line"] == 5 and payload["superseded"][0]["marked"] is True
    text = (ws / "memory/2026-03-02.md").read_text()
    assert "- Log retention is 21 days. *(superseded 2026-06-03 by memory/2026-06-03.md#L3)*\n" in (
        text
    )
    again = memory_supersede(
        writer,
        {"path": "memory/2026-03-02.md", "old_text": "Log retention", "new_text": "x"},
    )
    assert again["written"] is False and again["reason"] == "exists"
    missing = memory_supersede(
        writer, {"path": "memory/2026-03-02.md", "old_text": "database", "new_text": "x"}
    )
    assert missing["written"] is False and missing["reason"] == "not_unique"
    assert not (ws / "memory/2026-06-03.md").read_text().count("\nx\n")


def test_session_capture_supersedes_too(open_ws: OpenFn, ws: Path) -> None:
    writer = open_writer(open_ws, ws)
    messages = [
        {"role": "user", "content": "The staging database now listens on port 6432."},
        {"role": "assistant", "content": "Noted."},
    ]
    result = save_session(writer, messages, registry=PluginRegistry(load_entry_points=False))
    text = (ws / "memory/2026-03-02.md").read_text()
    assert f"{OLD} *(superseded 2026-06-03 by {result.path}#L" in text


def test_a_confirming_generator_can_veto(open_ws: OpenFn, ws: Path) -> None:
    writer = open_writer(open_ws, ws)
    asked: list[tuple[str, str]] = []

    def veto(old: str, new: str) -> bool:
        asked.append((old, new))
        return False

    writer.confirm = veto
    assert writer.append("The staging database now listens on port 6432.").superseded == []
    assert asked == [(OLD, "The staging database now listens on port 6432.")]


def _newer_fact_among_others(open_ws: OpenFn, ws: Path) -> MemoryWriter:
    """The old fact alone in a short file, the new one among other notes: keyword ranking
    alone puts the old file first."""
    (ws / "memory/2026-03-02.md").write_text(f"# 2026-03-02\n\n{OLD}\n")
    writer = open_writer(open_ws, ws)
    writer.append(
        "Reviewed the Q3 roadmap with the platform team and the billing folks today.\n"
        "The staging database now listens on port 6432."
    )
    return writer


def test_search_ranks_the_newer_fact_first_and_shows_the_marker(open_ws: OpenFn, ws: Path) -> None:
    writer = _newer_fact_among_others(open_ws, ws)
    hits = writer.manager.search("staging database port", min_score=0.0)
    paths = [hit.path for hit in hits]
    assert paths.index("memory/2026-06-03.md") < paths.index("memory/2026-03-02.md")
    old_hit = hits[paths.index("memory/2026-03-02.md")]
    assert "*(superseded 2026-06-03 by memory/2026-06-03.md#L4)*" in old_hit.snippet
    assert old_hit.score <= hits[paths.index("memory/2026-06-03.md")].score


def test_a_history_question_still_finds_the_old_fact(open_ws: OpenFn, ws: Path) -> None:
    writer = _newer_fact_among_others(open_ws, ws)
    hits = writer.manager.search("what port did the staging database use before?")
    assert hits and hits[0].path == "memory/2026-03-02.md"
    assert "port 5432" in hits[0].snippet


def test_a_failed_lookup_is_reported_in_the_result(
    open_ws: OpenFn, ws: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    writer = open_writer(open_ws, ws)

    def broken(*args: object, **kwargs: object) -> list[object]:
        raise RuntimeError("index gone")

    monkeypatch.setattr(unwrap(writer.manager), "search", broken)
    result = writer.append("The staging database now listens on port 6432.")
    assert result.superseded == [] and result.supersede_error is not None
    assert "RuntimeError: index gone" in result.supersede_error
    assert (ws / result.path).read_text().endswith("port 6432.\n")  # written either way


def test_confirmation_without_a_text_generator_is_said_and_skipped(
    open_ws: OpenFn, ws: Path, caplog: pytest.LogCaptureFixture
) -> None:
    memory = open_ws(ws, provider="none")
    memory.sync(reason="test")
    settings = MemwellSettings.model_validate({"write": {"supersede_confirm": True}})
    writer = MemoryWriter(memory, ws, settings, clock=lambda: JUNE)
    with caplog.at_level("WARNING"):
        result = writer.append("The staging database now listens on port 6432.")
    assert [s.marked for s in result.superseded] == [True]
    assert "no text generator is configured" in caplog.text
