"""``memwell mcp`` driven by the MCP SDK's real clients (stdio and streamable HTTP)."""

from __future__ import annotations

import json
import os
import queue
import subprocess
import sys
import threading
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client, ClientSession, StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.types import CallToolResult
from memwell.fallback import FallbackMemoryManager
from memwell.mcp_server import McpMemoryServer
from memwell.models import MemorySearchResult, MemoryStatus, ReadFileResult
from memwell.testing.conformance import write_workspace
from memwell.tools import tool_definitions

MEMWELL = Path(sys.executable).with_name("memwell")
DEADLINE_S = 60


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
        expected = {d["function"]["name"]: d["function"] for d in tool_definitions()}
        assert set(listed) == set(expected)  # no capture tools on the builtin backend
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
                "untrusted_data": True,
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


def _read_lines(stream: Any, lines: queue.Queue[str]) -> None:
    for line in stream:
        lines.put(line)


def test_streamable_http(workspace: Path, env: dict[str, str]) -> None:
    process = subprocess.Popen(
        [str(MEMWELL), "-w", str(workspace), "--provider", "none", "mcp", "--http", "--port", "0"],
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
                assert names == {"memory_search", "memory_get"}
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


# -- capture tools (memory_store / memory_recall / memory_forget), in-process ----------------


class PlainManager:
    """A minimal search manager; ``broken`` makes search fail."""

    def __init__(self) -> None:
        self.broken = False

    def search(self, query: str, **_: Any) -> list[MemorySearchResult]:
        if self.broken:
            raise RuntimeError("index is gone")
        return []

    def read_file(self, rel_path: str, **_: Any) -> ReadFileResult:
        return ReadFileResult(path=rel_path, text="")

    def status(self) -> MemoryStatus:
        return MemoryStatus(backend="plain", provider="none", workspace_dir="/tmp")

    def sync(self, **_: Any) -> None:
        return None

    def close(self) -> None:
        return None


class CaptureManager(PlainManager):
    """Also has ``store``/``recall``/``forget``, as a LanceDB-like backend exposes."""

    def __init__(self) -> None:
        super().__init__()
        self.memories: dict[str, str] = {}
        self.fail = False

    def store(
        self, text: str, *, importance: float | None = None, category: str | None = None
    ) -> Mapping[str, Any]:
        if self.fail:
            raise RuntimeError("table is gone")
        memory_id = f"m{len(self.memories) + 1}"
        self.memories[memory_id] = text
        return {
            "action": "created",
            "id": memory_id,
            "importance": importance,
            "category": category,
        }

    def recall(self, query: str, *, limit: int | None = None) -> Mapping[str, Any]:
        hits = [{"id": k, "text": v} for k, v in self.memories.items() if query in v]
        return {"memories": hits[: limit or 5]}

    def forget(
        self, *, query: str | None = None, memory_id: str | None = None
    ) -> Mapping[str, Any]:
        return {"action": "deleted", "id": memory_id, "text": self.memories.pop(memory_id or "")}


def test_capture_tools_when_the_manager_supports_them() -> None:
    manager = CaptureManager()

    async def call(client: Client, name: str, args: dict[str, Any]) -> dict[str, Any]:
        return payload(await client.call_tool(name, args))

    async def scenario() -> None:
        server = McpMemoryServer(manager, sync_on_start=False)  # type: ignore[arg-type]
        async with Client(server.server) as client:
            tools = {tool.name: tool for tool in (await client.list_tools()).tools}
            assert set(tools) == {
                "memory_search",
                "memory_get",
                "memory_store",
                "memory_recall",
                "memory_forget",
            }
            assert tools["memory_store"].input_schema["required"] == ["text"]

            stored = await call(
                client, "memory_store", {"text": "I prefer tea", "category": "preference"}
            )
            assert stored == {
                "action": "created",
                "id": "m1",
                "importance": None,
                "category": "preference",
            }
            recalled = await call(client, "memory_recall", {"query": "tea", "limit": 1.0})
            assert recalled == {"memories": [{"id": "m1", "text": "I prefer tea"}]}
            forgot = await call(client, "memory_forget", {"memory_id": "m1"})
            assert forgot == {"action": "deleted", "id": "m1", "text": "I prefer tea"}

            bad = await call(client, "memory_store", {"text": "x", "category": "gossip"})
            assert "category must be one of" in bad["error"]
            neither = await call(client, "memory_forget", {})
            assert neither == {"error": "provide query or memory_id"}
            not_number = await call(client, "memory_store", {"text": "x", "importance": "high"})
            assert not_number == {"error": "importance must be a number"}

            manager.fail = True
            broken = await call(client, "memory_store", {"text": "y"})
            assert broken == {"disabled": True, "error": "table is gone"}

    run(scenario)


def test_capture_tools_through_the_fallback_wrapper() -> None:
    primary = CaptureManager()
    wrapper = FallbackMemoryManager(primary, PlainManager, primary_name="capture")

    async def scenario() -> None:
        server = McpMemoryServer(wrapper, sync_on_start=False)
        async with Client(server.server) as client:
            names = {tool.name for tool in (await client.list_tools()).tools}
            assert {"memory_store", "memory_recall", "memory_forget"} <= names
            stored = payload(await client.call_tool("memory_store", {"text": "I prefer tea"}))
            assert stored["action"] == "created"

            primary.broken = True  # the wrapper switches to its fallback for good
            found = payload(await client.call_tool("memory_search", {"query": "tea"}))
            assert found["fallback"]["from"] == "capture"
            after = payload(await client.call_tool("memory_store", {"text": "I prefer coffee"}))
            assert after == {
                "disabled": True,
                "error": "the active memory backend does not store memories",
            }

    run(scenario)
