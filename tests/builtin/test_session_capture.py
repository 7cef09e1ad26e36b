"""Session capture on the builtin backend: the note's format, names, redaction, the index."""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest
from memwell.agent.session_capture import (
    SessionCaptureError,
    conversation_from_messages,
    read_transcript,
    save_session,
)
from memwell.contract.config import MemwellSettings
from memwell.contract.errors import ProviderError, WriteRefusedError
from memwell.contract.manager import MemorySearchManager
from memwell.registry.plugins import PluginRegistry
from memwell.writing import MemoryWriter

OpenFn = Callable[..., MemorySearchManager]
NOW = datetime(2026, 3, 4, 9, 30, tzinfo=timezone.utc)
SECRET = "sk-proj-4fG7hJ2kL9mN3pQ8rS5tV1wX"
EMPTY_REGISTRY = PluginRegistry(load_entry_points=False)


class Scripted:
    id = "scripted"
    model = "scripted-1"

    def __init__(self, answer: str | Exception) -> None:
        self.answer = answer

    def generate(self, prompt: str, *, max_tokens: int, system: str | None = None) -> str:
        if isinstance(self.answer, Exception):
            raise self.answer
        return self.answer


@pytest.fixture
def memory(open_ws: OpenFn, workspace: Path) -> MemorySearchManager:
    manager = open_ws(workspace, provider="none")
    manager.sync(reason="test")
    return manager


def make_writer(memory: MemorySearchManager, workspace: Path, **values: Any) -> MemoryWriter:
    return MemoryWriter(memory, workspace, MemwellSettings.model_validate(values))


@pytest.fixture
def writer(memory: MemorySearchManager, workspace: Path) -> MemoryWriter:
    return make_writer(memory, workspace)


def record(role: str, text: str, ts: str | None = None) -> str:
    message: dict[str, Any] = {"role": role, "content": [{"type": "text", "text": text}]}
    line: dict[str, Any] = {"type": "message", "message": message}
    if ts:
        line["timestamp"] = ts
    return json.dumps(line)


def transcript(tmp_path: Path, *lines: str) -> Path:
    path = tmp_path / "session.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def turns(count: int) -> list[dict[str, str]]:
    return [
        {"role": "user" if i % 2 == 0 else "assistant", "content": f"message number {i}"}
        for i in range(count)
    ]


def save(writer: MemoryWriter, conversation: Any, **options: Any) -> Any:
    options.setdefault("registry", EMPTY_REGISTRY)
    options.setdefault("now", NOW)
    return save_session(writer, conversation, **options)


def test_transcript_note_in_the_reference_format(
    writer: MemoryWriter, workspace: Path, tmp_path: Path, memory: MemorySearchManager
) -> None:
    path = transcript(
        tmp_path,
        json.dumps({"type": "session", "id": "sess-42"}),
        record("user", "Should the Zanzibar API use cursor\n\npagination?", "2026-02-10T08:00:00Z"),
        "{not json",
        json.dumps({"type": "custom", "data": {}}),
        "[1, 2]",
        record("assistant", "Yes: cursors stay stable.", "2026-02-10T08:05:09Z"),
        record("user", "/new", "2026-02-10T08:06:00Z"),
    )
    conversation = read_transcript(path)
    assert conversation.skipped_lines == 2 and conversation.session_id == "sess-42"
    result = save(writer, conversation, session_key="agent:main:main", source="telegram")
    assert result.path == "memory/2026-02-10-cursor-zanzibar-api.md"
    assert (result.messages, result.total_messages, result.skipped_lines) == (2, 2, 2)
    assert result.slug_source == "keywords" and result.indexed and not result.redacted
    assert (workspace / result.path).read_text(encoding="utf-8") == (
        "# Session: 2026-02-10 08:05:09 UTC\n"
        "\n"
        "- **Session Key**: agent:main:main\n"
        "- **Session ID**: sess-42\n"
        "- **Source**: telegram\n"
        "\n"
        "## Conversation Summary\n"
        "\n"
        "user: Should the Zanzibar API use cursor pagination?\n"
        "assistant: Yes: cursors stay stable.\n"
    )
    hits = memory.search("Zanzibar cursor pagination", min_score=0.0)
    assert hits and hits[0].path == result.path


def test_only_the_last_n_messages_are_kept(writer: MemoryWriter, workspace: Path) -> None:
    result = save(writer, turns(40))
    body = (workspace / result.path).read_text(encoding="utf-8")
    assert (result.messages, result.total_messages) == (15, 40)
    assert "message number 24" not in body
    assert "message number 25" in body
    assert body.endswith("user: message number 38\nassistant: message number 39\n")
    three = save(writer, turns(40), message_count=3)
    assert three.messages == 3
    with pytest.raises(ValueError, match="message_count"):
        save(writer, turns(2), message_count=0)


def test_the_configured_message_count_applies(memory: MemorySearchManager, workspace: Path) -> None:
    configured = make_writer(memory, workspace, session_save={"messages": 4})
    assert save(configured, turns(10)).messages == 4


def test_names_are_taken_with_suffixes_and_never_overwrite(
    writer: MemoryWriter, workspace: Path
) -> None:
    talk = [{"role": "user", "content": "Quarterly roadmap review with Dana"}]
    existing = workspace / "memory/2026-03-04-quarterly-roadmap-review.md"
    existing.parent.mkdir(parents=True, exist_ok=True)
    existing.write_text("keep me\n", encoding="utf-8")
    paths = [save(writer, talk).path for _ in range(2)]
    assert paths == [
        "memory/2026-03-04-quarterly-roadmap-review-2.md",
        "memory/2026-03-04-quarterly-roadmap-review-3.md",
    ]
    assert existing.read_text(encoding="utf-8") == "keep me\n"


def test_secrets_are_redacted_before_the_generator_and_the_file(
    writer: MemoryWriter, workspace: Path
) -> None:
    seen: list[str] = []

    class Spy(Scripted):
        def generate(self, prompt: str, *, max_tokens: int, system: str | None = None) -> str:
            seen.append(prompt)
            return "deploy-key"

    talk = [{"role": "user", "content": f"The deploy key is {SECRET}, keep it safe"}]
    result = save(writer, talk, generator=Spy("unused"), session_key=f"key {SECRET}")
    body = (workspace / result.path).read_text(encoding="utf-8")
    assert SECRET not in body and SECRET not in seen[0]
    assert result.redacted and result.slug == "deploy-key" and result.slug_source == "scripted"


def test_a_failing_generator_falls_back_to_keywords_and_says_so(
    writer: MemoryWriter,
) -> None:
    failing = Scripted(ProviderError("openai text generation request failed (HTTP 500)"))
    talk = [{"role": "user", "content": "Kubernetes upgrade window"}]
    result = save(writer, talk, generator=failing)
    assert result.slug == "kubernetes-upgrade-window" and result.slug_source == "keywords"
    assert any("HTTP 500" in note for note in result.notes)


def test_an_unavailable_configured_generator_is_reported_not_fatal(
    memory: MemorySearchManager, workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import memwell_openai.plugin

    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    registry = PluginRegistry(load_entry_points=False)
    registry.register(memwell_openai.plugin, "openai")
    configured = make_writer(memory, workspace, textgen={"provider": "openai"})
    talk = [{"role": "user", "content": "Espresso machine descaling"}]
    result = save(configured, talk, registry=registry)
    assert result.slug_source == "keywords"
    assert any("No API key found for provider openai" in note for note in result.notes)


def test_no_keyword_gives_the_time_slug(writer: MemoryWriter) -> None:
    result = save(
        writer, [{"role": "user", "content": "ok"}, {"role": "assistant", "content": "是"}]
    )
    assert result.path == "memory/2026-03-04-0930.md" and result.slug_source == "time"


def test_nothing_to_save_is_refused_with_the_skip_count(
    writer: MemoryWriter, workspace: Path, tmp_path: Path
) -> None:
    path = transcript(tmp_path, "garbage", record("tool", "ran ls"), record("user", "/reset"))
    with pytest.raises(SessionCaptureError, match=r"no user or assistant messages.*1 malformed"):
        save(writer, read_transcript(path))
    assert not list((workspace / "memory").glob("2026-*-*-*.md"))


def test_unreadable_transcripts_are_clear_errors(tmp_path: Path) -> None:
    with pytest.raises(SessionCaptureError, match="cannot read transcript"):
        read_transcript(tmp_path / "missing.jsonl")
    with pytest.raises(SessionCaptureError, match="not a file"):
        read_transcript(tmp_path)


def test_binary_garbage_is_skipped_not_raised(tmp_path: Path) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_bytes(b"\xff\xfe\x00garbage\n" + record("user", "real text").encode() + b"\n")
    conversation = read_transcript(path)
    assert conversation.skipped_lines == 1
    assert [m.text for m in conversation.messages] == ["real text"]


def test_writing_disabled_refuses_and_writes_nothing(
    memory: MemorySearchManager, workspace: Path
) -> None:
    read_only = make_writer(memory, workspace, write={"enabled": False})
    with pytest.raises(WriteRefusedError, match="disabled"):
        save(read_only, turns(2))
    assert not list((workspace / "memory").glob("2026-03-04-*.md"))


def test_messages_passed_in_keep_only_user_and_assistant_text() -> None:
    conversation = conversation_from_messages(
        [
            {"role": "system", "content": "You are helpful."},
            {"role": "user", "content": [{"type": "text", "text": "Plan  the\toffsite"}]},
            {"role": "tool", "content": "42"},
            {"role": "assistant", "content": None},
            {"role": "assistant", "content": "Booked for May."},
        ]
    )
    assert [(m.role, m.text) for m in conversation.messages] == [
        ("user", "Plan the offsite"),
        ("assistant", "Booked for May."),
    ]
