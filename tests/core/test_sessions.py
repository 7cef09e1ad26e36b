from __future__ import annotations

import hashlib
import json
import os
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from memwell.sources.sessions import (
    ParsedSession,
    is_session_transcript,
    layout_name,
    list_session_files,
    parse_session_jsonl,
    session_entry_hash,
)

API_KEY = "sk-proj-AbCdEf1234567890XYZabc"


def message(role: Any, content: Any, **extra: Any) -> str:
    return json.dumps({"type": "message", "message": {"role": role, "content": content}, **extra})


def test_user_and_assistant_messages_become_labelled_lines_mapped_to_jsonl_lines() -> None:
    raw = "\n".join(
        [
            json.dumps({"type": "session", "id": "s1"}),
            message("user", "Hello   there\n\n  friend"),
            message("system", "ignored"),
            message("assistant", [{"type": "text", "text": "Hi"}, {"type": "text", "text": "you"}]),
        ]
    )
    parsed = parse_session_jsonl(raw)
    assert parsed.content == "User: Hello there friend\nAssistant: Hi you"
    assert parsed.line_map == (2, 4)
    assert parsed.timestamps == (0, 0)
    assert parsed.generated_by_dreaming is False


def test_only_text_blocks_are_used_and_empty_messages_are_dropped() -> None:
    raw = "\n".join(
        [
            message(
                "assistant",
                [
                    {"type": "tool_use", "text": "no"},
                    {"type": "text", "text": "  yes \t"},
                    {"type": "text", "text": 42},
                    "loose string",
                    {"type": "text", "text": "   "},
                ],
            ),
            message("user", "   \n  "),
            message("user", []),
            message("tool", "tool output"),
        ]
    )
    parsed = parse_session_jsonl(raw)
    assert parsed.content == "Assistant: yes"
    assert parsed.line_map == (1,)


def test_blank_and_invalid_lines_are_skipped_but_line_numbers_keep_counting() -> None:
    raw = "\n".join(["", "{not json", "   ", message("user", "one"), "}", message("user", "two")])
    parsed = parse_session_jsonl(raw)
    assert parsed.content == "User: one\nUser: two"
    assert parsed.line_map == (4, 6)


def test_crlf_line_endings_are_accepted() -> None:
    raw = message("user", "one") + "\r\n" + message("assistant", "two") + "\r\n"
    assert parse_session_jsonl(raw).content == "User: one\nAssistant: two"


MALFORMED_LINES = [
    "[1, 2, 3]",
    "42",
    '"a string"',
    "null",
    "true",
    json.dumps({"type": "message"}),
    json.dumps({"type": "message", "message": "text"}),
    json.dumps({"type": "message", "message": None}),
    json.dumps({"type": "message", "message": {"content": "no role"}}),
    json.dumps({"type": "message", "message": {"role": ["user"], "content": "x"}}),
    json.dumps({"type": "message", "message": {"role": {"a": 1}, "content": "x"}}),
    json.dumps({"type": "message", "message": {"role": "user"}}),
    json.dumps({"type": "message", "message": {"role": "user", "content": 5}}),
    json.dumps({"type": "message", "message": {"role": "user", "content": {"text": "x"}}}),
    json.dumps({"type": "message", "message": {"role": "user", "content": [None, 1, [2]]}}),
    json.dumps({"type": ["message"], "message": {"role": "user", "content": "x"}}),
    json.dumps({"type": "custom", "customType": 5, "data": [1]}),
    "[" * 50_000 + "]" * 50_000,
    '{"a": ' + "1" * 10_000 + "}",
    "NaN",
    '{"type": "message", "message": {"role": "user", "content": "\\ud800"}',
]


@pytest.mark.parametrize("line", MALFORMED_LINES)
def test_malformed_lines_are_skipped_without_raising(line: str) -> None:
    parsed = parse_session_jsonl(line + "\n" + message("user", "kept"))
    assert parsed.content == "User: kept"
    assert parsed.line_map == (2,)


def test_lone_surrogates_are_replaced_so_content_is_valid_utf8() -> None:
    parsed = parse_session_jsonl(message("user", "a\ud800b"))
    assert parsed.content == "User: a\ufffdb"
    assert len(session_entry_hash(parsed)) == 64


SECONDS = 1_700_000_000
MS = SECONDS * 1000


@pytest.mark.parametrize(
    ("record_extra", "message_ts", "expected"),
    [
        ({}, SECONDS, MS),
        ({}, MS, MS),
        ({}, 1_700_000_000.5, MS + 500),
        ({"timestamp": MS}, None, MS),
        ({"timestamp": 1}, MS + 7, MS + 7),
        ({"timestamp": MS}, "garbage", MS),
        ({}, "2023-11-14T22:13:20.123Z", MS + 123),
        ({}, "2023-11-15T00:13:20+02:00", MS),
        ({}, "2023-11-14T22:13:20", MS),
        ({}, "not a date", 0),
        ({}, True, 0),
        ({}, -5, 0),
        ({}, float("nan"), 0),
        ({}, 10**400, 0),
        ({}, "0001-01-01T00:00:00+14:00", 0),
        ({"timestamp": [MS]}, {"t": 1}, 0),
    ],
)
def test_timestamps(record_extra: dict[str, Any], message_ts: Any, expected: int) -> None:
    record = {"type": "message", "message": {"role": "user", "content": "hi"}, **record_extra}
    if message_ts is not None:
        record["message"]["timestamp"] = message_ts
    assert parse_session_jsonl(json.dumps(record)).timestamps == (expected,)


def test_iso_timestamp_matches_datetime() -> None:
    expected = int(datetime(2024, 2, 29, 12, 0, tzinfo=timezone.utc).timestamp() * 1000)
    line = message("user", "hi", timestamp="2024-02-29T12:00:00Z")
    assert parse_session_jsonl(line).timestamps == (expected,)


def test_dreaming_transcripts_are_flagged() -> None:
    marker = {
        "type": "custom",
        "customType": "openclaw:bootstrap-context:full",
        "data": {"runId": "dreaming-narrative-42"},
    }
    assert parse_session_jsonl(json.dumps(marker)).generated_by_dreaming is True
    for runid in ("other-run", 7):
        other = {**marker, "data": {"runId": runid}}
        assert parse_session_jsonl(json.dumps(other)).generated_by_dreaming is False
    wrong_type = {**marker, "customType": "something-else"}
    assert parse_session_jsonl(json.dumps(wrong_type)).generated_by_dreaming is False


def test_secrets_never_survive_parsing() -> None:
    raw = "\n".join(
        [
            message("user", f"my key is {API_KEY} please keep it"),
            message("assistant", [{"type": "text", "text": f"OPENAI_API_KEY={API_KEY}"}]),
            message("user", f"curl -H 'Authorization: Bearer {API_KEY}'"),
        ]
    )
    parsed = parse_session_jsonl(raw)
    assert API_KEY not in parsed.content
    assert "AbCdEf1234567890" not in parsed.content
    assert parsed.content.count("\n") == 2


def test_multiline_private_key_stays_on_one_content_line() -> None:
    pem = "-----BEGIN PRIVATE KEY-----\nMIIsecret\n-----END PRIVATE KEY-----"
    parsed = parse_session_jsonl(message("user", pem))
    assert "MIIsecret" not in parsed.content
    assert "\n" not in parsed.content


def test_session_entry_hash_covers_content_lines_and_timestamps() -> None:
    parsed = ParsedSession("User: a\nAssistant: b", (2, 5), (1000, 0), False)
    expected = hashlib.sha256(b"User: a\nAssistant: b\n2,5\n1000,0").hexdigest()
    assert session_entry_hash(parsed) == expected
    assert session_entry_hash(ParsedSession(parsed.content, (2, 6), (1000, 0), False)) != expected
    assert session_entry_hash(ParsedSession(parsed.content, (2, 5), (1000, 1), False)) != expected


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("abc.jsonl", True),
        ("abc.jsonl.reset.2026-04-13T10-20-30Z", True),
        ("abc.jsonl.deleted.2026-04-13T10-20-30.123Z", True),
        ("abc.jsonl.reset.2026-04-13T10:20:30Z", False),
        ("abc.jsonl.reset.2026-04-13T10-20-30.12Z", False),
        ("abc.jsonl.reset.", False),
        ("abc.jsonl.bak.2026-04-13T10-20-30Z", False),
        ("abc.jsonl.reset.2026-04-13T10-20-30Z.bak", False),
        ("sessions.json", False),
        ("sessions.json.bak.3", False),
        ("abc.json", False),
        ("abc.JSONL", False),
        ("notes.md", False),
    ],
)
def test_is_session_transcript(name: str, expected: bool) -> None:
    assert is_session_transcript(name) is expected


def test_list_session_files(tmp_path: Path) -> None:
    sessions = tmp_path / "sessions"
    sessions.mkdir()
    names = [
        "b.jsonl",
        "a.jsonl",
        "a.jsonl.reset.2026-01-02T03-04-05Z",
        "c.jsonl.deleted.2026-01-02T03-04-05.678Z",
        "sessions.json",
        "a.jsonl.bak.2026-01-02T03-04-05Z",
    ]
    for name in names:
        (sessions / name).write_text("{}\n")
    (sessions / "dir.jsonl").mkdir()
    (sessions / "dir.jsonl" / "nested.jsonl").write_text("{}\n")
    (tmp_path / "outside.jsonl").write_text("{}\n")
    os.symlink(tmp_path / "outside.jsonl", sessions / "link.jsonl")
    assert [p.name for p in list_session_files(sessions)] == [
        "a.jsonl",
        "a.jsonl.reset.2026-01-02T03-04-05Z",
        "b.jsonl",
        "c.jsonl.deleted.2026-01-02T03-04-05.678Z",
    ]
    assert list_session_files(tmp_path / "missing") == []


def test_list_session_files_walks_the_reference_layout(tmp_path: Path) -> None:
    """Issue 40 item 13: ``sessions/<sessionKey>/transcripts/*.jsonl`` is read too, and no
    symlinked key or transcripts folder is followed out of the sessions folder."""
    sessions = tmp_path / "sessions"
    for key in ("agent:main", "agent:ops"):
        (sessions / key / "transcripts").mkdir(parents=True)
        (sessions / key / "transcripts" / "t1.jsonl").write_text("{}\n")
    (sessions / "agent:main" / "transcripts" / "sessions.json").write_text("{}\n")
    (sessions / "agent:main" / "state.jsonl").write_text("{}\n")  # not in transcripts/
    (sessions / "agent:main" / "transcripts" / "deeper").mkdir()
    (sessions / "agent:main" / "transcripts" / "deeper" / "t2.jsonl").write_text("{}\n")
    (sessions / "flat.jsonl").write_text("{}\n")
    outside = tmp_path / "outside"
    (outside / "transcripts").mkdir(parents=True)
    (outside / "transcripts" / "secret.jsonl").write_text("{}\n")
    os.symlink(outside, sessions / "linked-key")
    (sessions / "agent:x").mkdir()
    os.symlink(outside / "transcripts", sessions / "agent:x" / "transcripts")
    found = [p.relative_to(sessions).as_posix() for p in list_session_files(sessions)]
    assert found == [
        "agent:main/transcripts/t1.jsonl",
        "agent:ops/transcripts/t1.jsonl",
        "flat.jsonl",
    ]


@pytest.mark.parametrize(
    ("relative", "expected"),
    [
        ("a.jsonl", "a.jsonl"),
        ("key/transcripts/a.jsonl", "key/transcripts/a.jsonl"),
        ("key/transcripts/a.jsonl.deleted.2026-01-02T03-04-05Z", True),
        ("key/a.jsonl", None),
        ("key/other/a.jsonl", None),
        ("../transcripts/a.jsonl", None),
        ("./transcripts/a.jsonl", None),
        ("/transcripts/a.jsonl", None),
        ("a/b/transcripts/a.jsonl", None),
        ("key/transcripts/notes.md", None),
    ],
)
def test_layout_name(relative: str, expected: str | bool | None) -> None:
    assert layout_name(relative) == (relative if expected is True else expected)


def assert_consistent(parsed: ParsedSession, line_count: int) -> None:
    content_lines = parsed.content.split("\n") if parsed.content else []
    assert len(content_lines) == len(parsed.line_map) == len(parsed.timestamps)
    assert list(parsed.line_map) == sorted(set(parsed.line_map))
    assert all(1 <= number <= line_count for number in parsed.line_map)
    assert all(line.startswith(("User: ", "Assistant: ")) for line in content_lines)
    assert all(ts >= 0 for ts in parsed.timestamps)
    session_entry_hash(parsed)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.text(max_size=60), max_size=8))
def test_arbitrary_text_lines_never_raise(lines: list[str]) -> None:
    raw = "\n".join(lines)
    assert_consistent(parse_session_jsonl(raw), raw.count("\n") + 1)


JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20),
    lambda children: (
        st.lists(children, max_size=4)
        | st.dictionaries(
            st.sampled_from(["type", "message", "role", "content", "text", "timestamp", "data"]),
            children,
            max_size=4,
        )
    ),
    max_leaves=12,
)


def mostly(good: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    """``good`` three times out of four, otherwise an arbitrary JSON value."""
    return st.one_of(good, good, good, JSON_VALUES)


TEXT_BLOCKS = st.fixed_dictionaries(
    {"type": mostly(st.sampled_from(["text", "image"]))},
    optional={"text": mostly(st.text(max_size=20))},
)
MESSAGES = st.fixed_dictionaries(
    {
        "role": mostly(st.sampled_from(["user", "assistant", "system"])),
        "content": mostly(st.text(max_size=30) | st.lists(mostly(TEXT_BLOCKS), max_size=3)),
    },
    optional={"timestamp": JSON_VALUES},
)
RECORDS = st.fixed_dictionaries(
    {"type": mostly(st.just("message")), "message": mostly(MESSAGES)},
    optional={"timestamp": JSON_VALUES},
)


@settings(max_examples=80, deadline=None)
@given(st.lists(RECORDS.map(json.dumps), max_size=6))
def test_structured_hostile_records_never_raise(lines: list[str]) -> None:
    assert_consistent(parse_session_jsonl("\n".join(lines)), max(len(lines), 1))
