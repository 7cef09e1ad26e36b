"""The write tools through the OpenAI-style API (``tool_definitions`` / ``execute_tool``)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from memwell.agent.prompt import memory_prompt_section
from memwell.agent.tools import execute_tool, tool_definitions
from memwell.contract.config import MemwellSettings
from memwell.contract.manager import MemorySearchManager
from memwell.writing import MemoryWriter

OpenFn = Callable[..., MemorySearchManager]


@pytest.fixture
def memory(open_ws: OpenFn, workspace: Path) -> MemorySearchManager:
    manager = open_ws(workspace, provider="none")
    manager.sync(reason="test")
    return manager


@pytest.fixture
def writer(memory: MemorySearchManager, workspace: Path) -> MemoryWriter:
    return MemoryWriter(memory, workspace)


def test_definitions_offer_write_tools_only_with_an_enabled_writer(
    memory: MemorySearchManager, workspace: Path, writer: MemoryWriter
) -> None:
    def names(**kwargs: object) -> list[str]:
        return [d["function"]["name"] for d in tool_definitions(**kwargs)]  # type: ignore[arg-type]

    assert names() == ["memory_search", "memory_get"]
    assert names(writer=writer) == [
        "memory_search",
        "memory_get",
        "memory_write",
        "memory_edit",
        "memory_supersede",
        "memory_recent",
        "memory_reflect",
    ]
    off = MemoryWriter(
        memory, workspace, MemwellSettings.model_validate({"write": {"enabled": False}})
    )
    assert names(writer=off) == ["memory_search", "memory_get", "memory_recent"]
    description = tool_definitions(writer=writer)[2]["function"]["description"]
    assert "decisions" in description and "preferences" in description
    assert "never instructions" in description


def test_write_then_search_through_execute_tool(
    memory: MemorySearchManager, writer: MemoryWriter
) -> None:
    done = execute_tool(
        "memory_write",
        '{"text": "Gnocchi night is Thursday.", "file": "food"}',
        memory,
        writer=writer,
    )
    assert done["written"] is True and done["path"] == "memory/food.md"
    assert done["citation"] == "memory/food.md#L3" and "index_error" not in done
    found = execute_tool("memory_search", {"query": "Gnocchi Thursday"}, memory)
    assert found["results"][0]["path"] == "memory/food.md"

    edited = execute_tool(
        "memory_edit",
        {"path": "memory/food.md", "old_text": "Thursday", "new_text": "Friday"},
        memory,
        writer=writer,
    )
    assert edited["written"] is True and edited["operation"] == "replace"
    created = execute_tool(
        "memory_write", {"text": "x", "file": "food", "mode": "create"}, memory, writer=writer
    )
    assert created == {
        "written": False,
        "error": "memory/food.md already exists; append to it or replace a passage instead",
        "reason": "exists",
    }
    recent = execute_tool("memory_recent", {"limit": 1}, memory, writer=writer)
    assert [f["path"] for f in recent["files"]] == ["memory/food.md"]


@pytest.mark.parametrize(
    ("name", "args", "reason"),
    [
        ("memory_write", {"text": 3}, "invalid"),
        ("memory_write", {"text": "a", "mode": "delete"}, "invalid"),
        ("memory_write", {"text": "a", "mode": "create"}, "invalid"),
        ("memory_write", {"text": "a", "file": "../x.md"}, "not_allowed"),
        ("memory_edit", {"path": "MEMORY.md", "old_text": "", "new_text": "b"}, "blank"),
        ("memory_recent", {"limit": "ten"}, "invalid"),
    ],
)
def test_bad_arguments_give_error_payloads(
    memory: MemorySearchManager,
    writer: MemoryWriter,
    name: str,
    args: dict[str, object],
    reason: str,
) -> None:
    result = execute_tool(name, args, memory, writer=writer)
    assert result["reason"] == reason and result["error"]
    assert result.get("written", False) is False


def test_without_a_writer_the_tools_are_disabled(memory: MemorySearchManager) -> None:
    result = execute_tool("memory_write", {"text": "hello"}, memory)
    assert result["disabled"] is True and result["written"] is False
    assert execute_tool("memory_recent", {}, memory)["files"] == []


def test_prompt_mentions_writing_only_with_the_write_tool() -> None:
    assert "memory_write" not in memory_prompt_section()
    with_write = memory_prompt_section(tools_available=("memory_search", "memory_write"))
    assert "save it with memory_write" in with_write and "never store secrets" in with_write
