"""The ``memory_flush`` MCP prompt through the official SDK client and ``memwell mcp``."""

from __future__ import annotations

import json
import sys
from datetime import datetime
from pathlib import Path

import anyio
import pytest
from mcp import ClientSession, StdioServerParameters, stdio_client
from mcp.shared.exceptions import MCPError
from memwell.testing.conformance import write_workspace

MEMWELL = Path(sys.executable).with_name("memwell")


def test_flush_prompt_once_per_cycle_and_its_target_is_where_memory_write_appends(
    tmp_path: Path,
) -> None:
    workspace = write_workspace(tmp_path / "ws")
    env = {"MEMWELL_LOAD_PLUGINS": "builtin", "XDG_CONFIG_HOME": str(tmp_path / "xdg")}
    params = StdioServerParameters(
        command=str(MEMWELL),
        args=["-w", str(workspace), "--provider", "none", "mcp", "--no-watch"],
        env=env,
    )
    usage = {"context_window": "200000", "session_key": "agent:main:main"}

    async def scenario() -> None:
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            prompts = {p.name: p for p in (await session.list_prompts()).prompts}
            assert {"memory_recall", "memory_flush"} <= set(prompts)
            names = {argument.name for argument in prompts["memory_flush"].arguments or []}
            assert {"tokens_used", "context_window", "compaction_count"} <= names

            early = await session.get_prompt("memory_flush", {**usage, "tokens_used": "1000"})
            assert early.description == "No memory flush needed"
            assert "flush at 176000" in early.messages[0].content.text

            due = await session.get_prompt("memory_flush", {**usage, "tokens_used": "180000"})
            target = f"memory/{datetime.now().astimezone():%Y-%m-%d}.md"
            assert due.description == f"Flush to {target}"
            text = due.messages[0].content.text
            assert target in text and "NO_REPLY" in text and "Current time:" in text

            again = await session.get_prompt("memory_flush", {**usage, "tokens_used": "190000"})
            assert "already flushed in compaction cycle 0" in (again.messages[0].content.text)

            written = await session.call_tool(
                "memory_write", {"text": "Decided: the Quokka importer drops duplicates."}
            )
            assert json.loads(written.content[0].text)["path"] == target

            with pytest.raises(MCPError, match="tokens_used must be an integer"):
                await session.get_prompt(
                    "memory_flush", {"tokens_used": "many", "context_window": "9"}
                )

    async def bounded() -> None:
        with anyio.fail_after(60):
            await scenario()

    anyio.run(bounded)
    state = json.loads((workspace / ".memwell" / "flush-state.json").read_text())
    assert state == {"agent:main:main": "0"}
