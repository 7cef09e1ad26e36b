"""``compress_context`` over a real MCP client (in process), builtin backend."""

from __future__ import annotations

import json
import math
from pathlib import Path

import anyio
import memwell_sqlite.plugin
from mcp import Client
from memwell.context.compress import count_tokens
from memwell.context.tokens import EstimatedTokens
from memwell.context.transcript import Turn
from memwell.contract.config import MemwellSettings
from memwell.mcp.server import McpMemoryServer
from memwell.registry.plugins import PluginRegistry
from memwell.runtime.factory import close_all, open_memory
from memwell.testing.conformance import write_workspace

TURNS = [
    Turn("user", "Let's use Postgres 16 for billing."),
    Turn("tool", "\n".join(f"line {i} of a long migration log" for i in range(120))),
    Turn("user", "Let's use Postgres 16 for billing."),
]


def test_compress_context_tool(tmp_path: Path) -> None:
    registry = PluginRegistry(load_entry_points=False)
    registry.register(memwell_sqlite.plugin, "builtin")
    settings = MemwellSettings.model_validate({"provider": "none", "sync": {"watch": False}})
    manager = open_memory(write_workspace(tmp_path / "ws"), settings=settings, registry=registry)
    budget = math.ceil(count_tokens(TURNS, EstimatedTokens()) / 0.7)

    async def scenario() -> None:
        server = McpMemoryServer(manager, sync_on_start=False, registry=registry)
        async with Client(server.server) as client:
            tools = {tool.name: tool for tool in (await client.list_tools()).tools}
            assert tools["compress_context"].input_schema["required"] == [
                "messages",
                "budget_tokens",
            ]
            messages = [t.to_dict() for t in TURNS]
            result = await client.call_tool(
                "compress_context", {"messages": messages, "budget_tokens": budget}
            )
            data = json.loads(result.content[0].text)  # type: ignore[union-attr]
            assert data["level"] == "light" and data["fits"] and data["dropped_turns"] == 1
            assert data["collapsed_outputs"] == 1 and len(data["turns"]) == 2
            bad = await client.call_tool("compress_context", {"messages": [], "budget_tokens": 0})
            assert bad.is_error

    try:
        anyio.run(scenario)
    finally:
        close_all()
