"""The Markdown journal: format, parsing, round trips and rebuilding the memories table."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest
from lancedb_helpers import Build
from memwell_lancedb.journal import (
    format_entry,
    format_timestamp,
    parse_journal,
    parse_timestamp,
)
from memwell_lancedb.memory import Memory

TRICKY = (
    "Line one\n"
    "## 11111111-2222-4333-8444-555555555555\n"
    "- category: entity\n"
    "> already quoted\n"
    "\n"
    "  indented & <tagged> 'quotes' \"double\""
)


def _memory(text: str, **fields: object) -> Memory:
    values: dict[str, object] = {
        "id": str(uuid.uuid4()),
        "text": text,
        "category": "fact",
        "importance": 0.7,
        "created_at": 1_764_420_000_123,
        "session": None,
        **fields,
    }
    return Memory(**values)  # type: ignore[arg-type]


def test_entry_format_is_stable() -> None:
    memory = _memory(
        "I prefer dark mode\nin every editor",
        id="7d3c1f2a-3b9e-4c61-9a57-0b6f4f1d2e8c",
        category="preference",
        session="agent:main:direct",
    )
    assert format_entry(memory) == (
        "## 7d3c1f2a-3b9e-4c61-9a57-0b6f4f1d2e8c\n"
        "- category: preference\n"
        "- importance: 0.7\n"
        "- created_at: 2025-11-29T12:40:00.123Z\n"
        "- session: agent:main:direct\n"
        "> I prefer dark mode\n"
        "> in every editor\n"
        "\n"
    )


def test_timestamps_round_trip() -> None:
    for millis in (0, 1, 999, 1_764_420_000_123, 4_102_444_800_000):
        assert parse_timestamp(format_timestamp(millis)) == millis
    assert parse_timestamp("2025-11-29T12:40:00Z") == 1_764_420_000_000


def test_parse_round_trips_tricky_texts() -> None:
    memories = [
        _memory(TRICKY, category="entity", importance=0.25, session="s:1"),
        _memory("Plain", created_at=5),
    ]
    parsed = parse_journal("# Title\n\npreamble text\n\n" + "".join(map(format_entry, memories)))
    assert parsed.problems == []
    assert parsed.memories == memories


def test_parse_reports_malformed_entries() -> None:
    good = _memory("kept")
    content = (
        "## not-a-uuid\n> dropped\n\n"
        + format_entry(good)
        + format_entry(good)
        + f"## {uuid.uuid4()}\n- category: gossip\n- importance: lots\n> odd fields\n"
        + "stray line without quote\n\n"
        + f"## {uuid.uuid4()}\n- category: fact\n\n"
    )
    parsed = parse_journal(content)
    assert [m.text for m in parsed.memories] == ["kept", "odd fields"]
    odd = parsed.memories[1]
    assert (odd.category, odd.importance, odd.created_at) == ("other", 0.7, 0)
    joined = "\n".join(parsed.problems)
    for fragment in (
        "invalid id",
        "repeated",
        "unknown category",
        "bad importance",
        "created_at",
        "ignored",
        "no text",
    ):
        assert fragment in joined


def test_rebuild_from_journal_yields_the_same_memories(build: Build, workspace: Path) -> None:
    memory = build(workspace)
    texts = ["I prefer green tea", "We decided to ship on Mondays", TRICKY]
    for text in texts:
        memory.memories.store(text, category="decision", session="agent:x")
    before = sorted(memory.memories.list(), key=lambda m: m.id)
    memory.memories.forget(before[0].id)
    expected = sorted(memory.memories.list(), key=lambda m: m.id)

    report = memory.memories.rebuild_from_journal()
    assert report.count == 2 and report.problems == []
    assert sorted(memory.memories.list(), key=lambda m: m.id) == expected
    assert memory.memories.recall(expected[0].text)[0].memory == expected[0]

    fresh = build(workspace, lance={"uri": str(workspace / "elsewhere-db")})
    fresh.memories.rebuild_from_journal()
    assert sorted(fresh.memories.list(), key=lambda m: m.id) == expected


def test_hand_edits_apply_on_rebuild(build: Build, workspace: Path) -> None:
    memory = build(workspace)
    stored = memory.memories.store("The standup is at 9:30", category="fact").memory
    journal = workspace / "memory" / "captured.md"
    journal.write_text(
        journal.read_text().replace("> The standup is at 9:30", "> The standup is at 10:00")
    )
    memory.memories.rebuild_from_journal()
    (edited,) = memory.memories.list()
    assert (edited.id, edited.text) == (stored.id, "The standup is at 10:00")


def test_rebuild_without_journal_is_an_error(build: Build, workspace: Path) -> None:
    memory = build(workspace)
    with pytest.raises(FileNotFoundError):
        memory.memories.rebuild_from_journal()
    disabled = build(workspace, lance={"journal": False})
    disabled.memories.store("I prefer lilies over roses")
    assert not (workspace / "memory" / "captured.md").exists()
    with pytest.raises(FileNotFoundError, match="disabled"):
        disabled.memories.rebuild_from_journal()


def test_journal_path_is_configurable_and_validated(build: Build, workspace: Path) -> None:
    memory = build(workspace, lance={"journal_path": "notes/ltm.md"})
    memory.memories.store("I prefer lilies over roses")
    assert "lilies" in (workspace / "notes" / "ltm.md").read_text()
    from memwell_lancedb.config import LanceConfig

    for bad in ("/etc/x.md", "../x.md", "memory/x.txt"):
        with pytest.raises(ValueError, match="journal_path"):
            LanceConfig(journal_path=bad)


def test_journal_is_indexed_as_ordinary_memory(build: Build, workspace: Path) -> None:
    memory = build(workspace)
    memory.memories.store("The spare key is under the blue flowerpot", category="fact")
    memory.sync()
    hit = memory.search("spare key flowerpot", min_score=0.0)[0]
    assert hit.path == "memory/captured.md"
    assert "blue flowerpot" in memory.read_file(hit.path).text


def test_journal_refuses_symlinks(build: Build, workspace: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside.md"
    outside.write_text("")
    (workspace / "memory" / "captured.md").symlink_to(outside)
    memory = build(workspace)
    outcome = memory.memories.store("I prefer quiet mornings")
    assert outcome.action == "created" and outcome.journal_error
    assert outside.read_text() == ""
