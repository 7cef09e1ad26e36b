"""``memwell mcp --http`` checks every request before it reads the body, and asks a token.

A real server on 127.0.0.1 (port 0), raw sockets for what a polite client never sends (a
300 MB body, with and without a length; a foreign Host), and the official MCP client for the
token. The server's peak RSS (``VmHWM``) is read around each oversized body.
"""

from __future__ import annotations

import json
import os
import queue
import re
import stat
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from memwell.mcp.http_guard import MAX_BODY_BYTES
from memwell.testing.conformance import write_workspace
from memwell.testing.raw_http import raw_exchange
from reliability_helpers import COUNTS, mcp_initialize

MEMWELL = Path(sys.executable).with_name("memwell")
DEADLINE_S = 60.0
BIG_BODY = 300 * 1024 * 1024
CHUNK = b"x" * (1024 * 1024)
SERVE = ("--no-watch", "--http", "--port", "0")
INIT = mcp_initialize(0, "guard")
ACCEPT = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


@dataclass
class Running:
    proc: subprocess.Popen[str]
    url: str
    port: int
    stderr: list[str]

    def peak_rss(self) -> int:
        """The server's peak resident set size so far, in bytes."""
        status = Path(f"/proc/{self.proc.pid}/status").read_text()
        found = re.search(r"^VmHWM:\s+(\d+) kB", status, re.M)
        assert found, status
        return int(found.group(1)) * 1024


def start(workspace: Path, xdg: Path, *extra: str) -> Running:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMWELL_")}
    env |= {"MEMWELL_LOAD_PLUGINS": "builtin", "XDG_CONFIG_HOME": str(xdg)}
    proc = subprocess.Popen(
        [str(MEMWELL), "-w", str(workspace), "--provider", "none", "mcp", *SERVE, *extra],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    lines: queue.Queue[str] = queue.Queue()
    seen: list[str] = []

    def read() -> None:
        assert proc.stderr is not None
        for line in proc.stderr:
            seen.append(line)
            lines.put(line)

    threading.Thread(target=read, daemon=True).start()
    deadline = time.monotonic() + DEADLINE_S
    while True:
        line = lines.get(timeout=max(0.1, deadline - time.monotonic()))
        found = re.search(r"http://127\.0\.0\.1:(\d+)/mcp", line)
        if found:
            return Running(proc, found.group(0), int(found.group(1)), seen)


def stop(running: Running) -> None:
    running.proc.terminate()
    try:
        running.proc.wait(timeout=15)
    except subprocess.TimeoutExpired:
        running.proc.kill()
        running.proc.wait(timeout=15)


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    return write_workspace(tmp_path / "ws")


@pytest.fixture
def server(workspace: Path, tmp_path: Path) -> Iterator[Running]:
    running = start(workspace, tmp_path / "xdg")
    yield running
    stop(running)


def token_of(xdg: Path) -> str:
    return (xdg / "memwell" / "mcp-token").read_text().strip()


def initialize(server: Running, token: str) -> int:
    """The status of an ``initialize`` POST with ``token``."""
    headers = {**ACCEPT, "Authorization": f"Bearer {token}"}
    return httpx.post(server.url, headers=headers, json=INIT, timeout=DEADLINE_S).status_code


def raw_request(port: int, head: str, body: Iterator[bytes] | None = None) -> tuple[int, bytes]:
    """Send ``head``, then ``body`` while the server reads it; its status and body."""
    status, answer = raw_exchange(port, head.encode("latin-1"), body, timeout=DEADLINE_S)
    assert status, "the server closed the connection without an answer"
    return status, answer


def post_head(port: int, token: str, extra: str, host: str | None = None) -> str:
    return (
        f"POST /mcp HTTP/1.1\r\nHost: {host or f'127.0.0.1:{port}'}\r\n"
        f"Authorization: Bearer {token}\r\nContent-Type: application/json\r\n"
        f"Accept: application/json, text/event-stream\r\n{extra}\r\n"
    )


def limited(total: int) -> Iterator[bytes]:
    for _ in range(total // len(CHUNK)):
        yield CHUNK


def chunked(total: int) -> Iterator[bytes]:
    for _ in range(total // len(CHUNK)):
        yield b"%x\r\n" % len(CHUNK) + CHUNK + b"\r\n"
    yield b"0\r\n\r\n"


def test_token_made_once_kept_0600_and_printed_only_when_made(
    server: Running, workspace: Path, tmp_path: Path
) -> None:
    path = tmp_path / "xdg" / "memwell" / "mcp-token"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    token = token_of(tmp_path / "xdg")
    assert len(token) >= 40
    assert sum(token in line for line in server.stderr) == 1
    again = start(workspace, tmp_path / "xdg", "--read-only")
    try:
        assert token_of(tmp_path / "xdg") == token
        assert not any(token in line for line in again.stderr)
        assert any(str(path) in line for line in again.stderr)
    finally:
        stop(again)


@pytest.mark.parametrize("authorization", [None, "Bearer wrong-token", "Basic abc", "bearer"])
def test_requests_without_the_right_token_get_401(
    server: Running, authorization: str | None
) -> None:
    headers = dict(ACCEPT)
    if authorization is not None:
        headers["Authorization"] = authorization
    reply = httpx.post(server.url, headers=headers, json=INIT, timeout=DEADLINE_S)
    assert reply.status_code == 401
    assert reply.headers["www-authenticate"].startswith("Bearer")
    assert reply.json()["error"]["message"].startswith("Unauthorized")
    listing = httpx.get(server.url, headers=headers, timeout=DEADLINE_S)
    assert listing.status_code == 401


def test_the_official_client_with_the_token_calls_tools(server: Running, tmp_path: Path) -> None:
    headers = {"Authorization": f"Bearer {token_of(tmp_path / 'xdg')}"}

    async def scenario() -> None:
        with anyio.fail_after(DEADLINE_S):
            async with (
                create_mcp_http_client(headers=headers) as http,
                streamable_http_client(server.url, http_client=http) as (read, write),
                ClientSession(read, write) as session,
            ):
                await session.initialize()
                found = await session.call_tool("memory_search", {"query": "tomatoes watering"})
                payload: dict[str, Any] = json.loads(found.content[0].text)  # type: ignore[union-attr]
                assert payload["results"][0]["path"] == "memory/projects.md"

    anyio.run(scenario)


def test_no_auth_serves_without_a_token_and_says_so(workspace: Path, tmp_path: Path) -> None:
    running = start(workspace, tmp_path / "xdg", "--no-auth")
    try:
        reply = httpx.post(running.url, headers=ACCEPT, json=INIT, timeout=DEADLINE_S)
        assert reply.status_code == 200
        assert any("WARNING: --no-auth" in line for line in running.stderr)
        assert not (tmp_path / "xdg" / "memwell" / "mcp-token").exists()
    finally:
        stop(running)


def test_a_foreign_host_is_refused_before_the_body_is_read(server: Running, tmp_path: Path) -> None:
    token = token_of(tmp_path / "xdg")
    for host in (f"evil.example:{server.port}", "127.0.0.1:1", f"localhost.evil:{server.port}"):
        # a 200 MB body announced, none sent: an answer proves nothing waited for it
        head = post_head(server.port, token, f"Content-Length: {200 * 1024 * 1024}\r\n", host)
        status, body = raw_request(server.port, head)
        assert status == 421, host
        assert json.loads(body)["error"]["message"].startswith("Host header not allowed")
    evil = post_head(server.port, token, "Content-Length: 2\r\nOrigin: http://evil.example\r\n")
    assert raw_request(server.port, evil, iter([b"{}"]))[0] == 403


@pytest.mark.parametrize("framing", ["content-length", "chunked"])
def test_an_oversized_body_is_refused_without_being_held(
    server: Running, tmp_path: Path, framing: str
) -> None:
    token = token_of(tmp_path / "xdg")
    assert initialize(server, token) == 200
    before = server.peak_rss()
    if framing == "content-length":
        head = post_head(server.port, token, f"Content-Length: {BIG_BODY}\r\n")
        status, body = raw_request(server.port, head, limited(BIG_BODY))
    else:
        head = post_head(server.port, token, "Transfer-Encoding: chunked\r\n")
        status, body = raw_request(server.port, head, chunked(BIG_BODY))
    assert status == 413
    assert "Request body over" in json.loads(body)["error"]["message"]
    growth = server.peak_rss() - before
    # the cap (16 MiB) bounds what is held, far below the 300 MB sent
    assert growth < 4 * MAX_BODY_BYTES < BIG_BODY / 4, growth
    COUNTS["malformed MCP messages"] += 1
    assert initialize(server, token) == 200


def test_deep_nesting_gets_a_json_rpc_error_not_a_500(server: Running, tmp_path: Path) -> None:
    headers = {**ACCEPT, "Authorization": f"Bearer {token_of(tmp_path / 'xdg')}"}
    deep = b"[" * 100_000 + b"]" * 100_000
    reply = httpx.post(server.url, headers=headers, content=deep, timeout=DEADLINE_S)
    assert reply.status_code == 400
    assert reply.json()["error"]["code"] == -32700
    nested = b'{"jsonrpc":"2.0","id":7,"method":"ping","params":{"a":' + b"[" * 500
    nested += b"]" * 500 + b"}}"
    reply = httpx.post(server.url, headers=headers, content=nested, timeout=DEADLINE_S)
    assert reply.status_code == 400
    assert reply.json()["id"] == 7 and reply.json()["error"]["code"] == -32600
