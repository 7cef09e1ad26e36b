"""A battery of malformed JSON-RPC messages sent to a real ``memwell mcp`` (stdio and HTTP).

Each message gets exactly one well-formed JSON-RPC reply (a parse error, an invalid-request
error, or the SDK's own error for a valid request it cannot serve), except valid
notifications and responses, which get none, as JSON-RPC 2.0 says. After every message a
``ping`` proves the server still reads; at the end a real ``memory_search`` still answers.
"""

from __future__ import annotations

import json
import os
import queue
import re
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import httpx
import pytest
from memwell.testing.conformance import write_workspace
from reliability_helpers import COUNTS, mcp_initialize

MEMWELL = Path(sys.executable).with_name("memwell")
PARSE, INVALID, NOT_FOUND, BAD_PARAMS = -32700, -32600, -32601, -32602
REPLY_SECONDS = 30.0
HTTP_ARGS = ("--no-watch", "--http", "--port", "0", "--no-auth")

Expected = list[tuple[int, object]]
"""The replies one message must get: (error code, id), in any order; [] for none."""

BATTERY: list[tuple[bytes, Expected | str]] = [
    # invalid JSON: parse error, id null
    (b"{bad json", [(PARSE, None)]),
    (b'{"jsonrpc": "2.0", "id": 1,', [(PARSE, None)]),
    (b"[1, 2", [(PARSE, None)]),
    (b"nul", [(PARSE, None)]),
    (b"{'single': 'quotes'}", [(PARSE, None)]),
    (b"\x00\x01garbage", [(PARSE, None)]),
    (b'{"a": 1}}', [(PARSE, None)]),
    (b'"unterminated', [(PARSE, None)]),
    (b'{"jsonrpc":"2.0","id":2,"method":"ping"} trailing', [(PARSE, None)]),
    (b"\xff\xfe{\x80", [(PARSE, None)]),
    # not a request object, id unknown: invalid request, id null
    (b"42", [(INVALID, None)]),
    (b'"text"', [(INVALID, None)]),
    (b"null", [(INVALID, None)]),
    (b"true", [(INVALID, None)]),
    (b"[]", [(INVALID, None)]),
    (b"{}", [(INVALID, None)]),
    (b'{"jsonrpc":"2.0"}', [(INVALID, None)]),
    (b'{"jsonrpc":"2.0","id":null,"method":"ping"}', [(INVALID, None)]),
    (b'{"jsonrpc":"2.0","id":1.5,"method":"ping"}', [(INVALID, None)]),
    (b'{"jsonrpc":"2.0","id":true,"method":"ping"}', [(INVALID, None)]),
    (b'{"jsonrpc":"2.0","id":[1],"method":"ping"}', [(INVALID, None)]),
    (b'{"jsonrpc":"2.0","id":{"a":1},"method":"ping"}', [(INVALID, None)]),
    (b'{"jsonrpc":"2.0","method":5}', [(INVALID, None)]),
    (b'{"method":"notifications/initialized"}', [(INVALID, None)]),
    # invalid request with a usable id: invalid request, that id
    (b'{"id":101,"method":"ping"}', [(INVALID, 101)]),
    (b'{"jsonrpc":"1.0","id":102,"method":"ping"}', [(INVALID, 102)]),
    (b'{"jsonrpc":2.0,"id":103,"method":"ping"}', [(INVALID, 103)]),
    (b'{"jsonrpc":"2.0","id":104,"method":5}', [(INVALID, 104)]),
    (b'{"jsonrpc":"2.0","id":105,"method":null}', [(INVALID, 105)]),
    (b'{"jsonrpc":"2.0","id":106,"method":"ping","params":[1]}', [(INVALID, 106)]),
    (b'{"jsonrpc":"2.0","id":107,"method":"ping","params":"x"}', [(INVALID, 107)]),
    (b'{"jsonrpc":"2.0","id":"s108"}', [(INVALID, "s108")]),
    (b'{"jsonrpc":"2.0","id":109,"result":5}', [(INVALID, 109)]),
    (b'{"jsonrpc":"2.0","id":110,"result":{},"error":{}}', [(INVALID, 110)]),
    (b'{"jsonrpc":"2.0","id":111,"error":"x"}', [(INVALID, 111)]),
    # batches (MCP has none): one array reply, an error per element
    (
        b'[{"jsonrpc":"2.0","id":120,"method":"ping"},{"jsonrpc":"2.0","id":121,"method":"ping"}]',
        "batch:120,121",
    ),
    (b"[1,2,3]", "batch:-,-,-"),
    (b'[{"jsonrpc":"2.0","method":"notifications/initialized"}]', "batch:-"),
    # valid envelopes the SDK answers with its own error
    (b'{"jsonrpc":"2.0","id":130,"method":"no/such"}', [(NOT_FOUND, 130)]),
    (b'{"jsonrpc":"2.0","id":"s131","method":"no/such"}', [(NOT_FOUND, "s131")]),
    (b'{"jsonrpc":"2.0","id":132,"method":"tools/call","params":{}}', [(BAD_PARAMS, 132)]),
    (
        b'{"jsonrpc":"2.0","id":133,"method":"tools/call",'
        b'"params":{"name":"memory_search","arguments":"x"}}',
        [(BAD_PARAMS, 133)],
    ),
    # nesting past the parser's limit, and past MAX_DEPTH in a request's params
    (b"[" * 100_000 + b"]" * 100_000, [(PARSE, None)]),
    (
        b'{"jsonrpc":"2.0","id":134,"method":"tools/call","params":{"name":"memory_search",'
        b'"arguments":{"query":"x","deep":' + b"[" * 80 + b"]" * 80 + b"}}}",
        [(INVALID, 134)],
    ),
    # a lone surrogate in any string argument of any tool (the reply could not be written)
    *[
        (
            b'{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"%s",'
            b'"arguments":%s}}' % (number, name.encode(), arguments),
            [(BAD_PARAMS, number)],
        )
        for number, name, arguments in [
            (150, "memory_search", rb'{"query":"\ud800"}'),
            (151, "memory_search", rb'{"query":"tomatoes \udfff watering"}'),
            (152, "memory_get", rb'{"path":"memory/\ud800.md"}'),
            (153, "memory_write", rb'{"text":"note \ud800"}'),
            (154, "memory_write", rb'{"text":"note","heading":"\udbff"}'),
            (155, "memory_edit", rb'{"path":"MEMORY.md","old_text":"\ud800","new_text":"x"}'),
            (156, "memory_recent", rb'{"limit":1,"\ud800":1}'),
            (
                157,
                "compress_context",
                rb'{"messages":[{"role":"user","content":"\ud800"}],'
                rb'"budget_tokens":10}',
            ),
        ]
    ],
    # valid notifications and responses, blank lines: no reply
    (b'{"jsonrpc":"2.0","method":"notifications/no-such"}', []),
    (b'{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":999}}', []),
    (b'{"jsonrpc":"2.0","method":"x","params":{}}', []),
    (b'{"jsonrpc":"2.0","id":140,"result":{}}', []),
    (b"", []),
    (b"   \t", []),
]


class Server:
    """``memwell mcp`` over pipes; stdout lines are collected by a reader thread."""

    def __init__(self, workspace: Path, env: dict[str, str]) -> None:
        self.proc = subprocess.Popen(
            [str(MEMWELL), "-w", str(workspace), "--provider", "none", "mcp", "--no-watch"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env={**os.environ, **env},
        )
        self.lines: queue.Queue[bytes] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.put(line)

    def send(self, raw: bytes) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(raw + b"\n")
        self.proc.stdin.flush()

    def request(self, message: dict[str, Any]) -> None:
        self.send(json.dumps(message).encode())

    def until(self, message_id: object) -> list[Any]:
        """Every reply up to and including the response with ``message_id``."""
        replies: list[Any] = []
        deadline = time.monotonic() + REPLY_SECONDS
        while True:
            line = self.lines.get(timeout=max(0.1, deadline - time.monotonic()))
            reply = json.loads(line)
            replies.append(reply)
            if isinstance(reply, dict) and reply.get("id") == message_id and "method" not in reply:
                return replies

    def close(self) -> None:
        self.proc.kill()
        self.proc.wait()


def well_formed_error(reply: object) -> tuple[int, object]:
    assert isinstance(reply, dict), reply
    assert reply.get("jsonrpc") == "2.0" and set(reply) == {"jsonrpc", "id", "error"}, reply
    error = reply["error"]
    assert isinstance(error["code"], int) and isinstance(error["message"], str) and error["message"]
    return error["code"], reply["id"]


def check_batch(replies: list[Any], spec: str) -> None:
    """``batch:120,-`` = one array reply with invalid-request errors for ids 120 and null."""
    assert len(replies) == 1 and isinstance(replies[0], list), replies
    ids = [None if part == "-" else int(part) for part in spec.removeprefix("batch:").split(",")]
    assert [well_formed_error(r) for r in replies[0]] == [(INVALID, i) for i in ids]


@pytest.fixture
def server(tmp_path: Path) -> Any:
    workspace = write_workspace(tmp_path / "ws")
    env = {"MEMWELL_LOAD_PLUGINS": "builtin", "XDG_CONFIG_HOME": str(tmp_path / "xdg")}
    running = Server(workspace, env)
    yield running
    running.close()


def test_every_malformed_message_gets_one_error_reply(server: Server) -> None:
    server.request(mcp_initialize("init", "battery"))
    assert "result" in server.until("init")[-1]
    server.request({"jsonrpc": "2.0", "method": "notifications/initialized"})
    for number, (raw, expected) in enumerate(BATTERY):
        server.send(raw)
        probe = f"probe-{number}"
        server.request({"jsonrpc": "2.0", "id": probe, "method": "ping"})
        replies = server.until(probe)
        assert replies[-1] == {"jsonrpc": "2.0", "id": probe, "result": {}}, raw
        answers = replies[:-1]
        if isinstance(expected, str):
            check_batch(answers, expected)
        else:
            wanted_ids = {i for _, i in expected if i is not None}
            while len(answers) < len(expected) and wanted_ids:  # the SDK may answer later
                answers += server.until(next(iter(wanted_ids - {a["id"] for a in answers})))
            assert sorted(map(well_formed_error, answers), key=repr) == sorted(
                expected, key=repr
            ), raw
        COUNTS["malformed MCP messages"] += 1
    server.request(
        {
            "jsonrpc": "2.0",
            "id": "last",
            "method": "tools/call",
            "params": {"name": "memory_search", "arguments": {"query": "Zanzibar codename"}},
        }
    )
    final = server.until("last")
    assert len(final) == 1, final
    content = json.loads(final[0]["result"]["content"][0]["text"])
    assert content["results"], content


def start_http(workspace: Path, env: dict[str, str]) -> tuple[subprocess.Popen[str], str]:
    proc = subprocess.Popen(
        [str(MEMWELL), "-w", str(workspace), "--provider", "none", "mcp", *HTTP_ARGS],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, **env},
    )
    assert proc.stderr is not None
    for line in proc.stderr:
        found = re.search(r"http://127\.0\.0\.1:\d+/mcp", line)
        if found:
            threading.Thread(target=proc.stderr.read, daemon=True).start()
            return proc, found.group(0)
    raise AssertionError("memwell mcp --http printed no URL")


def test_streamable_http_answers_malformed_bodies_with_400_and_the_error(tmp_path: Path) -> None:
    workspace = write_workspace(tmp_path / "ws")
    env = {"MEMWELL_LOAD_PLUGINS": "builtin", "XDG_CONFIG_HOME": str(tmp_path / "xdg")}
    proc, url = start_http(workspace, env)
    headers = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
    try:
        with httpx.Client(timeout=REPLY_SECONDS) as client:
            reply = client.post(url, headers=headers, json=mcp_initialize(0, "battery"))
            assert reply.status_code == 200
            headers["mcp-session-id"] = reply.headers["mcp-session-id"]
            headers["mcp-protocol-version"] = "2025-06-18"
            for raw, expected in BATTERY:
                screened = isinstance(expected, str) or any(
                    code in (PARSE, INVALID) for code, _ in expected
                )
                if not screened or not raw.strip():
                    continue
                answer = client.post(url, headers=headers, content=raw)
                assert answer.status_code == 400, raw
                body = answer.json()
                if isinstance(expected, str):
                    check_batch([body], expected)
                else:
                    assert [well_formed_error(body)] == expected, raw
                ping = client.post(
                    url, headers=headers, json={"jsonrpc": "2.0", "id": "p", "method": "ping"}
                )
                assert ping.status_code == 200 and '"id":"p"' in ping.text.replace(" ", "")
                COUNTS["malformed MCP messages"] += 1
    finally:
        proc.kill()
        proc.wait()
