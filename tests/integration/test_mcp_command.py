"""``memwell mcp`` as a user runs it: the printed client config starts, Ctrl-C stops it
quietly, a taken port fails at once with one line."""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import ClientSession, StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from memwell.testing.conformance import write_workspace

MEMWELL = Path(sys.executable).with_name("memwell")
DEADLINE_S = 60


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    return write_workspace(tmp_path / "ws")


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("MEMWELL_")}
    return clean | {"MEMWELL_LOAD_PLUGINS": "builtin", "XDG_CONFIG_HOME": str(tmp_path / "xdg")}


def memwell(env: dict[str, str], *args: str, cwd: Path | None = None) -> str:
    done = subprocess.run(
        [str(MEMWELL), *args], capture_output=True, text=True, env=env, cwd=cwd, check=True
    )
    return done.stdout


async def search_works(session: ClientSession) -> None:
    await session.initialize()
    found = await session.call_tool("memory_search", {"query": "tomatoes watering"})
    payload: dict[str, Any] = json.loads(found.content[0].text)  # type: ignore[union-attr]
    assert payload["results"][0]["path"] == "memory/projects.md"


def test_printed_stdio_config_is_started_by_the_official_client(
    workspace: Path, env: dict[str, str], tmp_path: Path
) -> None:
    # printed from elsewhere, with a relative workspace: the entry holds absolute paths
    printed = memwell(env, "-w", "ws", "--provider", "none", "mcp", "--print-config", cwd=tmp_path)
    entry = json.loads(printed)["mcpServers"]["memwell"]
    assert entry["command"] == str(MEMWELL)
    assert entry["args"] == ["-w", str(workspace), "--provider", "none", "mcp"]
    vscode = json.loads(
        memwell(env, "-w", str(workspace), "mcp", "--print-config", "--client", "vscode")
    )
    assert vscode["servers"]["memwell"]["type"] == "stdio"
    assert vscode["servers"]["memwell"]["command"] == str(MEMWELL)
    # a desktop client's PATH lacks the venv: start it with a bare PATH
    bare = {**env, "PATH": "/usr/bin:/bin"}
    params = StdioServerParameters(command=entry["command"], args=entry["args"], env=bare)

    async def scenario() -> None:
        with anyio.fail_after(DEADLINE_S):
            async with stdio_client(params) as (read, write), ClientSession(read, write) as s:
                await search_works(s)

    anyio.run(scenario)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def serve_http(workspace: Path, env: dict[str, str], port: int) -> subprocess.Popen[str]:
    """``memwell mcp --http`` on ``port``, stdout and stderr piped."""
    serve = ("mcp", "--http", "--port", str(port))
    return subprocess.Popen(
        [str(MEMWELL), "-w", str(workspace), "--provider", "none", *serve],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )


def wait_for_line(proc: subprocess.Popen[str], pattern: str) -> str:
    assert proc.stderr is not None
    deadline = time.monotonic() + DEADLINE_S
    while time.monotonic() < deadline:
        line = proc.stderr.readline()
        if re.search(pattern, line):
            return line
        assert line, "the server stopped"
    raise AssertionError(f"no line matching {pattern!r}")


async def http_search_works(url: str, headers: dict[str, str]) -> None:
    with anyio.fail_after(DEADLINE_S):
        async with (
            create_mcp_http_client(headers=headers) as http,
            streamable_http_client(url, http_client=http) as (read, write),
            ClientSession(read, write) as session,
        ):
            await search_works(session)


def test_printed_http_config_with_its_token_is_used_by_the_official_client(
    workspace: Path, env: dict[str, str]
) -> None:
    port = free_port()
    proc = serve_http(workspace, env, port)
    try:
        wait_for_line(proc, r"serving http://")
        for client in ("claude", "cursor", "vscode"):
            printed = memwell(
                env,
                "-w",
                str(workspace),
                "mcp",
                "--print-config",
                "--http",
                "--port",
                str(port),
                "--client",
                client,
            )
            config = json.loads(printed)
            entry = (config.get("servers") or config["mcpServers"])["memwell"]
            assert entry["url"] == f"http://127.0.0.1:{port}/mcp"
            assert entry["headers"]["Authorization"].startswith("Bearer ")

            anyio.run(http_search_works, entry["url"], entry["headers"])
    finally:
        proc.terminate()
        proc.wait(timeout=15)


@pytest.mark.parametrize("when", ["new bearer token", "serving http://"])
def test_ctrl_c_stops_the_http_server_quietly_with_status_0(
    workspace: Path, env: dict[str, str], when: str
) -> None:
    """Ctrl-C while the server opens the index (the token line comes after the port is bound)
    or while it serves."""
    proc = serve_http(workspace, env, 0)
    try:
        wait_for_line(proc, when)
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=DEADLINE_S)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0, err
    assert "aborted" not in err and "Traceback" not in err
    assert out == ""


def test_a_taken_port_is_one_error_line_before_the_index_is_opened(
    workspace: Path, env: dict[str, str]
) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        index = workspace / ".memwell"
        done = subprocess.run(
            [str(MEMWELL), "-w", str(workspace), "mcp", "--http", "--port", str(port)],
            capture_output=True,
            text=True,
            env=env,
            timeout=DEADLINE_S,
        )
    assert done.returncode != 0
    assert done.stderr.splitlines() == [
        f"error: cannot listen on 127.0.0.1:{port}: address already in use (choose another --port)"
    ]
    assert not index.exists()  # nothing was opened, let alone synced
