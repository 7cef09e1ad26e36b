"""``memwell mcp`` driven by the MCP SDK's real clients (stdio and streamable HTTP)."""

from __future__ import annotations

import json
import os
import queue
import subprocess
import sys
import threading
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client, ClientSession, StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.types import CallToolResult
from memwell.agent.reflect_tool import REFLECT_TOOL
from memwell.agent.tools import WRITE_TOOL_NAMES, tool_definitions
from memwell.agent.write_tools import (
    MEMORY_EDIT_TOOL,
    MEMORY_RECENT_TOOL,
    MEMORY_SUPERSEDE_TOOL,
    MEMORY_WRITE_TOOL,
)
from memwell.contract.models import MemorySearchResult
from memwell.mcp.server import McpMemoryServer
from memwell.registry.plugins import PluginRegistry
from memwell.runtime.factory import close_all, open_memory
from memwell.runtime.fallback import FallbackMemoryManager
from memwell.testing import hash_provider_plugin
from memwell.testing.conformance import write_workspace

MEMWELL = Path(sys.executable).with_name("memwell")
DEADLINE_S = 60
HTTP_NO_AUTH = ("--http", "--port", "0", "--no-auth")


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    return write_workspace(tmp_path / "ws")


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    """Only the builtin backend, no user config, and a short watch debounce."""
    return {
        "MEMWELL_LOAD_PLUGINS": "builtin",
        "MEMWELL_SYNC__WATCH_DEBOUNCE_MS": "100",
        "XDG_CONFIG_HOME": str(tmp_path / "xdg"),
    }


def run(scenario: Callable[[], Awaitable[None]]) -> None:
    async def bounded() -> None:
        with anyio.fail_after(DEADLINE_S):
            await scenario()

    anyio.run(bounded)


@asynccontextmanager
async def stdio_session(workspace: Path, env: dict[str, str]) -> AsyncIterator[ClientSession]:
    params = StdioServerParameters(
        command=str(MEMWELL),
        args=["-w", str(workspace), "--provider", "none", "mcp"],
        env=env,
    )
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        yield session


def payload(result: CallToolResult) -> dict[str, Any]:
    """The tool payload; the text content and the structured content must agree."""
    assert len(result.content) == 1 and result.content[0].type == "text"
    data: dict[str, Any] = json.loads(result.content[0].text)
    assert result.structured_content == data
    assert result.is_error == ("error" in data)
    return data


def test_tools_match_the_agent_tool_definitions(workspace: Path, env: dict[str, str]) -> None:
    async def scenario() -> None:
        async with stdio_session(workspace, env) as session:
            listed = {tool.name: tool for tool in (await session.list_tools()).tools}
            assert "memory_search" in (session.instructions or "")
        definitions = [
            *tool_definitions(),
            MEMORY_WRITE_TOOL,
            MEMORY_EDIT_TOOL,
            MEMORY_SUPERSEDE_TOOL,
            MEMORY_RECENT_TOOL,
            REFLECT_TOOL,
        ]
        expected = {d["function"]["name"]: d["function"] for d in definitions}
        # no capture tools on the builtin backend; context compression on every backend
        assert set(listed) == {*expected, "compress_context"}
        for name, function in expected.items():
            assert listed[name].input_schema == function["parameters"]
            assert listed[name].description == function["description"]

    run(scenario)


def test_search_get_and_error_payloads(workspace: Path, env: dict[str, str]) -> None:
    async def scenario() -> None:
        async with stdio_session(workspace, env) as session:
            found = payload(
                await session.call_tool("memory_search", {"query": "Zanzibar codename"})
            )
            assert found["mode"] == "fts-only" and found["untrusted_data"] is True
            top = found["results"][0]
            assert top["path"] == "memory/2026-01-02.md"
            assert top["citation"].startswith("memory/2026-01-02.md#L")

            got = payload(
                await session.call_tool(
                    "memory_get", {"path": top["path"], "from_line": 3, "lines": 1}
                )
            )
            assert got == {
                "path": "memory/2026-01-02.md",
                "text": "We picked Zanzibar as the codename for the billing rewrite.",
                "start_line": 3,
                "end_line": 3,
                "untrusted_data": True,
            }

            gone = await session.call_tool("memory_get", {"path": "memory/gone.md"})
            assert gone.is_error is True
            assert payload(gone) == {
                "path": "memory/gone.md",
                "text": "",
                "error": "not found: no such memory file: memory/gone.md",
                "reason": "not_found",
            }

            escape = payload(await session.call_tool("memory_get", {"path": "../outside.md"}))
            assert escape["disabled"] is True and escape["text"] == ""
            assert "path not allowed" in escape["error"]

            blank = payload(await session.call_tool("memory_search", {"query": "   "}))
            assert blank == {"results": [], "warning": "The query is blank; nothing was searched."}

            wrong = payload(await session.call_tool("memory_search", {"query": 7}))
            assert wrong == {"results": [], "error": "query must be a string, got int"}

            missing = payload(await session.call_tool("memory_get", {}))
            assert missing["error"] == "path must be a non-empty string"

            unknown = payload(await session.call_tool("memory_delete_everything", {}))
            assert "unknown tool" in unknown["error"]

    run(scenario)


def test_edits_become_searchable_without_restart(workspace: Path, env: dict[str, str]) -> None:
    async def search_paths(session: ClientSession, query: str) -> list[str]:
        data = payload(await session.call_tool("memory_search", {"query": query, "min_score": 0.0}))
        return [hit["path"] for hit in data["results"]]

    async def scenario() -> None:
        async with stdio_session(workspace, env) as session:
            assert await search_paths(session, "Zanzibar") == ["memory/2026-01-02.md"]
            assert await search_paths(session, "pelicans") == []
            (workspace / "memory" / "birds.md").write_text(
                "# Birds\n\nPelicans nest by the lake every spring.\n", encoding="utf-8"
            )
            (workspace / "memory" / "2026-01-02.md").write_text(
                "# 2026-01-02\n\nThe codename is now Quokka.\n", encoding="utf-8"
            )
            while await search_paths(session, "pelicans") != ["memory/birds.md"]:
                await anyio.sleep(0.2)
            while await search_paths(session, "Zanzibar"):
                await anyio.sleep(0.2)
            assert await search_paths(session, "Quokka") == ["memory/2026-01-02.md"]

    run(scenario)


def test_resource_templates_and_output_schemas(workspace: Path, env: dict[str, str]) -> None:
    async def scenario() -> None:
        async with stdio_session(workspace, env) as session:
            templates = (await session.list_resource_templates()).resource_templates
            assert [t.uri_template for t in templates] == ["memwell:{+path}"]
            listed = {tool.name: tool for tool in (await session.list_tools()).tools}
            get_schema = listed["memory_get"].output_schema or {}
            assert {"start_line", "end_line"} <= set(get_schema["properties"])
            compress_schema = listed["compress_context"].output_schema or {}
            assert {"level", "turns", "tokens_after", "fits"} <= set(compress_schema["properties"])
            # the client validates every structured result against the declared schema
            messages = [{"role": "user", "content": "The garden looked green in May. " * 40}]
            done = await session.call_tool(
                "compress_context", {"messages": messages, "budget_tokens": 40}
            )
            assert done.is_error is False and done.structured_content["level"] == "heavy"
            bad = await session.call_tool(
                "compress_context", {"messages": messages, "budget_tokens": 0}
            )
            assert bad.is_error is True

    run(scenario)


def _read_lines(stream: Any, lines: queue.Queue[str]) -> None:
    for line in stream:
        lines.put(line)


def test_streamable_http(workspace: Path, env: dict[str, str]) -> None:
    process = subprocess.Popen(
        [str(MEMWELL), "-w", str(workspace), "--provider", "none", "mcp", *HTTP_NO_AUTH],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env={**{k: v for k, v in os.environ.items() if not k.startswith("MEMWELL_")}, **env},
    )
    lines: queue.Queue[str] = queue.Queue()
    threading.Thread(target=_read_lines, args=(process.stderr, lines), daemon=True).start()
    try:
        line = ""
        while "serving " not in line:
            line = lines.get(timeout=DEADLINE_S)
        url = line.split("serving ", 1)[1].strip()
        assert url.startswith("http://127.0.0.1:") and url.endswith("/mcp")

        async def scenario() -> None:
            async with (
                streamable_http_client(url) as (read, write),
                ClientSession(read, write) as session,
            ):
                await session.initialize()
                names = {tool.name for tool in (await session.list_tools()).tools}
                assert names == {
                    "memory_search",
                    "memory_get",
                    "compress_context",
                    *WRITE_TOOL_NAMES,
                }
                found = payload(
                    await session.call_tool("memory_search", {"query": "tomatoes watering"})
                )
                assert found["results"][0]["path"] == "memory/projects.md"

        run(scenario)
    finally:
        process.terminate()
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=15)


# -- plugin tools: LanceDB's memory_store / memory_recall / memory_forget ---------------------

LANCE_TOOLS = {"memory_store", "memory_recall", "memory_forget"}


def lance_workspace(root: Path, provider: str) -> Path:
    workspace = write_workspace(root)
    (workspace / "memwell.toml").write_text(
        f'backend = "lancedb"\nprovider = "{provider}"\n', encoding="utf-8"
    )
    return workspace


@pytest.fixture
def lance_registry() -> PluginRegistry:
    """builtin (the fallback), lancedb and the deterministic hash provider, in process."""
    pytest.importorskip("memwell_lancedb")
    import memwell_lancedb.plugin as lance_plugin
    import memwell_sqlite.plugin as builtin_plugin

    registry = PluginRegistry(load_entry_points=False)
    registry.register(builtin_plugin, "builtin")
    registry.register(lance_plugin, "lancedb")
    registry.register(hash_provider_plugin(), "hash")
    return registry


@pytest.fixture
def no_user_config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    for name in [k for k in os.environ if k.startswith("MEMWELL_")]:
        monkeypatch.delenv(name)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    yield
    close_all()


async def call(client: Client, name: str, args: dict[str, Any]) -> dict[str, Any]:
    return payload(await client.call_tool(name, args))


def test_lancedb_tools_over_stdio(tmp_path: Path, env: dict[str, str]) -> None:
    """The subprocess loads the real entry points; without a provider storing is disabled."""
    lance_tools = pytest.importorskip("memwell_lancedb.tools")
    workspace = lance_workspace(tmp_path / "lance-ws", "none")

    async def scenario() -> None:
        params = StdioServerParameters(
            command=str(MEMWELL),
            args=["-w", str(workspace), "mcp", "--no-watch"],
            env={**env, "MEMWELL_LOAD_PLUGINS": "builtin,lancedb"},
        )
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            listed = {tool.name: tool for tool in (await session.list_tools()).tools}
            assert set(listed) == {
                "memory_search",
                "memory_get",
                "compress_context",
                *WRITE_TOOL_NAMES,
                *LANCE_TOOLS,
            }
            for definition in lance_tools.tool_definitions():
                function = definition["function"]
                assert listed[function["name"]].input_schema == function["parameters"]
                assert listed[function["name"]].description == function["description"]
            stored = payload(await session.call_tool("memory_store", {"text": "I prefer tea"}))
            assert stored["disabled"] is True and "embedding provider" in stored["error"]
            wrong = payload(await session.call_tool("memory_recall", {"query": 7}))
            assert wrong == {"results": [], "error": "query must be a non-empty string"}

    run(scenario)


def test_lancedb_store_recall_forget_round_trip(
    tmp_path: Path, lance_registry: PluginRegistry, no_user_config: None
) -> None:
    workspace = lance_workspace(tmp_path / "lance-ws", "hash")
    manager = open_memory(workspace, registry=lance_registry)

    async def scenario() -> None:
        server = McpMemoryServer(manager, sync_on_start=False, registry=lance_registry)
        async with Client(server.server) as client:
            tools = {tool.name: tool for tool in (await client.list_tools()).tools}
            assert set(tools) == {"memory_search", "memory_get", "compress_context", *LANCE_TOOLS}
            assert tools["memory_store"].input_schema["required"] == ["text"]
            hints = {name: tools[name].annotations for name in LANCE_TOOLS}
            assert hints["memory_recall"].read_only_hint is True  # type: ignore[union-attr]
            assert hints["memory_forget"].destructive_hint is True  # type: ignore[union-attr]
            assert hints["memory_store"].destructive_hint is False  # type: ignore[union-attr]

            stored = await call(
                client, "memory_store", {"text": "I prefer green tea", "category": "preference"}
            )
            assert stored["action"] == "created" and stored["category"] == "preference"
            again = await call(client, "memory_store", {"text": "I prefer green tea"})
            assert again["action"] == "duplicate" and again["existing_id"] == stored["id"]

            recalled = await call(client, "memory_recall", {"query": "green tea", "limit": 1.0})
            assert [hit["id"] for hit in recalled["results"]] == [stored["id"]]
            assert recalled["results"][0]["text"] == "I prefer green tea"
            assert recalled["untrusted_data"] is True

            bad = await call(client, "memory_store", {"text": "x", "category": "gossip"})
            assert "category must be one of" in bad["error"]
            neither = await call(client, "memory_forget", {})
            assert neither == {"error": "Provide query or memory_id."}

            forgot = await call(client, "memory_forget", {"memory_id": stored["id"]})
            assert forgot["action"] == "deleted" and forgot["id"] == stored["id"]
            empty = await call(client, "memory_recall", {"query": "green tea"})
            assert empty["results"] == []

    run(scenario)


def test_lancedb_tools_disabled_after_a_switch_to_the_fallback(
    tmp_path: Path, lance_registry: PluginRegistry, no_user_config: None
) -> None:
    workspace = lance_workspace(tmp_path / "lance-ws", "hash")
    wrapper = open_memory(workspace, registry=lance_registry)
    assert isinstance(wrapper.inner, FallbackMemoryManager)

    async def scenario() -> None:
        server = McpMemoryServer(wrapper, sync_on_start=False, registry=lance_registry)
        async with Client(server.server) as client:
            stored = await call(client, "memory_store", {"text": "I prefer green tea"})
            assert stored["action"] == "created"

            primary = wrapper.active
            assert primary is not None
            # a search reaches the backend as a batch of one (search_batch)
            primary.search_batch = _broken  # type: ignore[method-assign]
            found = await call(client, "memory_search", {"query": "tea"})
            assert found["fallback"]["from"] == "lancedb"
            after = await call(client, "memory_store", {"text": "I prefer coffee"})
            assert after["disabled"] is True and "lancedb" in after["error"]

        # a server built now, on the builtin fallback, no longer offers the tools
        names = set(McpMemoryServer(wrapper, sync_on_start=False, registry=lance_registry).tools)
        assert names == {"memory_search", "memory_get", "compress_context"}

    run(scenario)


def _broken(*args: Any, **kwargs: Any) -> list[MemorySearchResult]:
    raise RuntimeError("index is gone")


def test_builtin_backend_has_no_plugin_tools(
    tmp_path: Path, lance_registry: PluginRegistry, no_user_config: None
) -> None:
    workspace = write_workspace(tmp_path / "ws")
    manager = open_memory(workspace, overrides={"provider": "none"}, registry=lance_registry)

    async def scenario() -> None:
        server = McpMemoryServer(manager, sync_on_start=False, registry=lance_registry)
        async with Client(server.server) as client:
            names = {tool.name for tool in (await client.list_tools()).tools}
            assert names == {"memory_search", "memory_get", "compress_context"}
            unknown = await call(client, "memory_store", {"text": "I prefer tea"})
            assert "unknown tool" in unknown["error"]

    run(scenario)
