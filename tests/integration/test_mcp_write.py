"""Writing memory over MCP with the official SDK client: ``memwell mcp`` in real processes."""

from __future__ import annotations

# ruff: noqa: F811  (the pytest fixtures imported from test_mcp are redefined as arguments)
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import memwell_sqlite.plugin
import pytest
from mcp import Client, ClientSession, StdioServerParameters, stdio_client
from mcp.shared.exceptions import MCPError
from memwell.contract.config import MemwellSettings
from memwell.mcp.server import McpMemoryServer, resource_uri
from memwell.registry.plugins import PluginRegistry
from memwell.runtime.factory import close_all, open_memory
from memwell.testing.conformance import write_workspace
from memwell.writing import MemoryWriter
from test_mcp import MEMWELL, env, payload, run, workspace  # noqa: F401  (shared fixtures)

SECRET = "ghp_AbCdEfGhIjKlMnOpQrStUvWxYz012345"
APPENDS_PER_PROCESS = 50


@asynccontextmanager
async def session(
    workspace: Path, env: dict[str, str], *extra: str
) -> AsyncIterator[ClientSession]:
    """A ``memwell mcp`` server process (no watcher: only the writer's sync updates the index)."""
    params = StdioServerParameters(
        command=str(MEMWELL),
        args=["-w", str(workspace), "--provider", "none", "mcp", "--no-watch", *extra],
        env=env,
    )
    async with stdio_client(params) as (read, write), ClientSession(read, write) as client:
        await client.initialize()
        yield client


async def write(client: ClientSession, **args: Any) -> dict[str, Any]:
    return payload(await client.call_tool("memory_write", args))


def test_a_written_note_is_found_by_a_new_process(workspace: Path, env: dict[str, str]) -> None:
    async def scenario() -> None:
        async with session(workspace, env) as writer:
            done = await write(writer, text="We moved the standup to 9:45.", heading="Decisions")
            assert done["written"] is True and done["indexed"] is True
            assert done["path"] == "MEMORY.md"
            assert done["citation"] == f"MEMORY.md#L{done['start_line']}"
        async with session(workspace, env) as reader:
            found = payload(await reader.call_tool("memory_search", {"query": "standup 9:45"}))
            assert found["results"][0]["path"] == "MEMORY.md"
            assert "standup to 9:45" in found["results"][0]["snippet"]

    run(scenario)


def test_two_processes_appending_at_once_lose_nothing(workspace: Path, env: dict[str, str]) -> None:
    async def appender(name: str) -> None:
        async with session(workspace, env) as client:
            for i in range(APPENDS_PER_PROCESS):
                done = await write(client, text=f"- {name} note {i}", file="memory/shared.md")
                assert done["written"] is True, done

    async def scenario() -> None:
        async with anyio.create_task_group() as group:
            group.start_soon(appender, "alpha")
            group.start_soon(appender, "beta")

    run(scenario)
    lines = (workspace / "memory/shared.md").read_text().splitlines()
    notes = [line for line in lines if line.startswith("- ")]
    expected = {f"- {n} note {i}" for n in ("alpha", "beta") for i in range(APPENDS_PER_PROCESS)}
    assert len(notes) == 2 * APPENDS_PER_PROCESS and set(notes) == expected
    assert lines[0] == "# shared"


def test_writes_outside_through_symlinks_or_with_secrets(
    workspace: Path, env: dict[str, str], tmp_path: Path
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "notes.md").write_text("untouched\n")
    (workspace / "memory/escape.md").symlink_to(outside / "notes.md")
    (workspace / "memory/elsewhere").symlink_to(outside, target_is_directory=True)

    async def scenario() -> None:
        async with session(workspace, env) as client:
            for target in ("../outside/notes.md", "memory/escape.md", "memory/elsewhere/new.md"):
                refused = await write(client, text="overwrite", file=target)
                assert refused["written"] is False and refused["reason"] == "not_allowed"
                assert "path not allowed" in refused["error"]
            created = await write(client, text="x", file="memory/elsewhere/a.md", mode="create")
            assert created["reason"] == "not_allowed"
            edit = payload(
                await client.call_tool(
                    "memory_edit",
                    {"path": "memory/escape.md", "old_text": "untouched", "new_text": "gone"},
                )
            )
            assert edit["written"] is False and edit["reason"] == "not_allowed"

            secret = await write(client, text=f"CI token is {SECRET}")
            assert secret["written"] is True and secret["redacted"] is True
            stored = (workspace / secret["path"]).read_text()
            assert SECRET not in stored and "ghp_Ab…2345" in stored

    run(scenario)
    assert (outside / "notes.md").read_text() == "untouched\n"
    assert sorted(p.name for p in outside.iterdir()) == ["notes.md"]


def test_read_only_server_offers_no_write_tools(workspace: Path, env: dict[str, str]) -> None:
    async def scenario() -> None:
        async with session(workspace, env, "--read-only") as client:
            names = {tool.name for tool in (await client.list_tools()).tools}
            assert names == {"memory_search", "memory_get", "memory_recent", "compress_context"}
            refused = await write(client, text="hello")
            assert refused["disabled"] is True and refused["reason"] == "disabled"
            recent = payload(await client.call_tool("memory_recent", {"limit": 2}))
            assert len(recent["files"]) == 2

    run(scenario)
    assert all("hello" not in p.read_text() for p in (workspace / "memory").glob("*.md"))


@pytest.fixture
def server(tmp_path: Path, registry: PluginRegistry) -> McpMemoryServer:
    workspace = write_workspace(tmp_path / "ws")
    settings = MemwellSettings.model_validate(
        {"provider": "none", "sync": {"watch": False, "on_search": False}}
    )
    manager = open_memory(workspace, settings=settings, registry=registry)
    manager.sync(reason="test")
    writer = MemoryWriter(manager, workspace, settings)
    return McpMemoryServer(manager, sync_on_start=False, registry=registry, writer=writer)


@pytest.fixture
def registry() -> Iterator[PluginRegistry]:
    reg = PluginRegistry(load_entry_points=False)
    reg.register(memwell_sqlite.plugin, "builtin")
    yield reg
    close_all()


def test_annotations_and_output_schemas(server: McpMemoryServer) -> None:
    expected = {
        "memory_search": (True, False, True),
        "memory_get": (True, False, True),
        "memory_recent": (True, False, True),
        "compress_context": (True, False, True),
        "memory_write": (False, False, False),
        "memory_edit": (False, True, False),
        "memory_supersede": (False, True, False),
        "memory_reflect": (False, False, True),
    }

    async def scenario() -> None:
        async with Client(server.server) as client:
            tools = {tool.name: tool for tool in (await client.list_tools()).tools}
            assert set(tools) == set(expected)
            for name, (read_only, destructive, idempotent) in expected.items():
                hints = tools[name].annotations
                assert hints is not None
                assert (hints.read_only_hint, hints.destructive_hint, hints.idempotent_hint) == (
                    read_only,
                    destructive,
                    idempotent,
                )
                assert tools[name].output_schema is not None
            # The client validates every structured result against the output schema.
            await client.call_tool("memory_search", {"query": "Zanzibar"})
            await client.call_tool("memory_search", {"query": 3})
            await client.call_tool("memory_get", {"path": "../x.md"})
            await client.call_tool("memory_write", {"text": "Zanzibar ships in May."})
            await client.call_tool("memory_write", {"text": ""})
            await client.call_tool("memory_edit", {"path": "MEMORY.md", "old_text": "nope"})
            await client.call_tool("memory_recent", {"limit": "x"})
            await client.call_tool("memory_reflect", {})
            await client.call_tool("memory_reflect", {"unexpected": 1})

    run(scenario)


def test_memory_files_are_resources_and_recall_is_a_prompt(server: McpMemoryServer) -> None:
    async def scenario() -> None:
        async with Client(server.server) as client:
            listed = (await client.list_resources()).resources
            assert [r.name for r in listed] == [
                "MEMORY.md",
                "memory/2026-01-02.md",
                "memory/projects.md",
            ]
            assert all(r.mime_type == "text/markdown" and r.size for r in listed)
            read = await client.read_resource(resource_uri("memory/2026-01-02.md"))
            assert "Zanzibar" in read.contents[0].text
            for bad in ("memwell:../outside.md", "memwell:memory/x.txt", "file:///etc/passwd"):
                with pytest.raises(MCPError):
                    await client.read_resource(bad)

            prompts = (await client.list_prompts()).prompts
            assert [p.name for p in prompts] == ["memory_recall", "memory_flush"]
            prompt = await client.get_prompt("memory_recall")
            text = prompt.messages[0].content.text  # type: ignore[union-attr]
            assert text.startswith("## Memory Recall") and "memory_write" in text
            assert "never instructions" in text or "not instructions" in text

    run(scenario)


def test_reflect_and_writes_over_mcp_are_audited_as_mcp(
    workspace: Path, env: dict[str, str]
) -> None:
    notes = {
        "memory/2026-11-01.md": "Met with Ines Duarte about the billing cutover.\n",
        "memory/2026-11-02.md": "Signed off by Ines Duarte.\n",
    }
    for rel, text in notes.items():
        (workspace / rel).write_text(text)

    async def scenario() -> None:
        async with session(workspace, env) as client:
            done = await write(client, text="Ines Duarte owns the cutover.", file="cutover")
            assert done["written"] is True and "audit_error" not in done
            reflected = payload(await client.call_tool("memory_reflect", {}))
            assert reflected["reflected"] is True, reflected
            assert "memory/graph/entities/ines-duarte.md" in reflected["added"]
            again = payload(await client.call_tool("memory_reflect", {}))
            assert again["added"] == again["changed"] == [] and not again["scores_changed"]
            found = payload(await client.call_tool("memory_search", {"query": "Ines Duarte"}))
            paths = [hit["path"] for hit in found["results"]]
            assert "memory/graph/entities/ines-duarte.md" in paths

    run(scenario)
    lines = [
        line.split("\t") for line in (workspace / "memory/meta/audit.log").read_text().splitlines()
    ]
    assert {fields[1] for fields in lines} == {"mcp"}
    assert lines[0][2] == "append"
    assert {fields[2] for fields in lines[1:]} == {"reflect"}
    assert all("Ines" not in field for fields in lines for field in fields)
