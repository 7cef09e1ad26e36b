"""JSON-RPC 2.0 framing for the MCP stdio transport: every malformed message gets an answer.

The MCP SDK drops a line it cannot decode, and decodes some invalid requests (a ``null``,
fractional or boolean ``id``) as notifications, so a client waiting on that message hangs.
:func:`screen_line` checks each incoming line against JSON-RPC 2.0 and the MCP envelope
first: invalid JSON is answered with a parse error (-32700), anything else that is not a
request, notification or response (a non-object, a missing or wrong ``jsonrpc``, a bad
``id``, ``method`` or ``params``, a batch, which MCP does not support) with an invalid-request
error (-32600). JSON nested deeper than :data:`MAX_DEPTH` levels is refused (-32600, or -32700
when too deep for the parser), and so is a request whose strings hold a lone UTF-16 surrogate
(``"\\ud800"``; -32602), which is not Unicode text: the SDK could not write a reply holding it,
and the client would wait for ever. An error carries the message's ``id`` when it is a valid
one, else ``null``; a batch is answered with an array of errors, one per element (one error for
an empty batch), as the specification says. Blank lines are skipped. Only valid lines reach the
SDK.

:func:`screened_stdio` is the SDK's ``stdio_server`` with this screen in front of it;
:class:`memwell.mcp.http_guard.GuardedHttp` puts it in front of the streamable HTTP app, where a
refused POST body is answered with status 400 and the error (the SDK itself would call most of
these "invalid params" and accept a ``null`` or fractional ``id`` as a notification).
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import re
import sys
import threading
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from io import TextIOWrapper
from typing import Any, BinaryIO

import anyio
import anyio.to_thread
import mcp.types as types
from mcp.server.stdio import stdio_server

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
INVALID_PARAMS = -32602
MAX_DEPTH = 64
"""The deepest nesting of arrays and objects a message may have (the envelope included)."""
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


@dataclass(frozen=True)
class Screened:
    """What to do with one incoming line: pass it to the SDK, or answer with ``reply``."""

    forward: bool
    reply: str | None = None


_SKIP = Screened(forward=False)
_FORWARD = Screened(forward=True)


def _valid_id(value: object) -> bool:
    return isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool))


def _error(message_id: object, code: int, message: str) -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "id": message_id if _valid_id(message_id) else None,
        "error": {"code": code, "message": message},
    }


def check_message(message: object) -> str | None:
    """Why ``message`` (decoded JSON) is not a valid MCP JSON-RPC message, or ``None``."""
    if not isinstance(message, dict):
        return f"a message must be a JSON object, got {type(message).__name__}"
    if message.get("jsonrpc") != "2.0":
        return 'the "jsonrpc" member must be exactly "2.0"'
    if "id" in message and not _valid_id(message["id"]):
        return 'the "id" member must be a string or an integer'
    if "method" in message:
        if not isinstance(message["method"], str):
            return 'the "method" member must be a string'
        if "params" in message and not isinstance(message["params"], dict | None):
            return 'the "params" member must be an object'
        return None
    has_result, has_error = "result" in message, "error" in message
    if "id" not in message or has_result == has_error:
        return 'a message needs a "method" (request), or an "id" with "result" or "error"'
    return None


def content_problem(message: object) -> tuple[int, str] | None:
    """The error code and reason when ``message`` (decoded JSON) nests deeper than
    :data:`MAX_DEPTH` or holds a lone surrogate in a string (key or value), else ``None``."""
    stack: list[tuple[object, int]] = [(message, 1)]
    while stack:
        value, depth = stack.pop()
        if isinstance(value, str):
            found = _LONE_SURROGATE.search(value)
            if found:
                code = f"U+{ord(found.group()):04X}"
                return INVALID_PARAMS, f"a string holds a lone surrogate ({code}), not Unicode text"
        elif isinstance(value, dict | list):
            if depth > MAX_DEPTH:
                return INVALID_REQUEST, f"JSON nested deeper than {MAX_DEPTH} levels"
            items = [*value.keys(), *value.values()] if isinstance(value, dict) else value
            stack.extend((item, depth + 1) for item in items)
    return None


def _invalid(message: object, reason: str) -> dict[str, Any]:
    message_id = message.get("id") if isinstance(message, dict) else None
    return _error(message_id, INVALID_REQUEST, f"Invalid Request: {reason}")


def screen_line(line: str) -> Screened:
    """Decide what happens to one line read from the client (see the module docstring)."""
    if not line.strip():
        return _SKIP
    try:
        message = json.loads(line)
    except ValueError as exc:
        reply = _error(None, PARSE_ERROR, f"Parse error: {exc}")
        return Screened(forward=False, reply=json.dumps(reply))
    except RecursionError:
        reply = _error(
            None, PARSE_ERROR, f"Parse error: JSON nested deeper than {MAX_DEPTH} levels"
        )
        return Screened(forward=False, reply=json.dumps(reply))
    if isinstance(message, list):
        unsupported = "batches are not supported by MCP"
        errors = [_invalid(item, unsupported) for item in message]
        errors = errors or [_invalid(None, "empty batch")]
        payload: object = errors if message else errors[0]
        return Screened(forward=False, reply=json.dumps(payload))
    reason = check_message(message)
    problem = content_problem(message) if reason is None else None
    if problem is not None:
        code, why = problem
        if not isinstance(message, dict) or "method" not in message or "id" not in message:
            return _SKIP  # a notification or a response: JSON-RPC answers neither
        label = "Invalid params" if code == INVALID_PARAMS else "Invalid Request"
        return Screened(
            forward=False, reply=json.dumps(_error(message["id"], code, f"{label}: {why}"))
        )
    if reason is None:
        try:
            types.jsonrpc_message_adapter.validate_python(message, by_name=False)
        except ValueError as exc:  # pydantic's ValidationError is a ValueError
            reason = f"not an MCP message ({exc.__class__.__name__})"
        else:
            return _FORWARD
    return Screened(forward=False, reply=json.dumps(_invalid(message, reason)))


class _LineWriter:
    """Writes whole lines to the client, one at a time (the SDK's replies and ours)."""

    def __init__(self, binary: BinaryIO) -> None:
        self._binary = binary
        self._lock = threading.Lock()

    def _write(self, text: str) -> None:
        with self._lock:
            self._binary.write(text.encode("utf-8"))
            self._binary.flush()

    async def write(self, text: str) -> None:
        await anyio.to_thread.run_sync(self._write, text)

    async def flush(self) -> None:
        """Every :meth:`write` is flushed already."""


class _ScreenedLines:
    """The client's lines that pass :func:`screen_line`; the others are answered here."""

    def __init__(self, source: BinaryIO, writer: _LineWriter) -> None:
        text = TextIOWrapper(source, encoding="utf-8", errors="replace")
        self._lines = anyio.wrap_file(text)
        self._writer = writer

    def __aiter__(self) -> AsyncIterator[str]:
        return self._screen()

    async def _screen(self) -> AsyncIterator[str]:
        async for line in self._lines:
            verdict = screen_line(line)
            if verdict.forward:
                yield line
            elif verdict.reply is not None:
                await self._writer.write(verdict.reply + "\n")


@contextlib.contextmanager
def _claimed_std_streams() -> Iterator[tuple[BinaryIO, BinaryIO]]:
    """Private copies of fds 0 and 1 for the wire; meanwhile fd 0 reads the null device and
    fd 1 writes to stderr, so stray prints and child processes never touch the protocol."""
    sys.stdout.flush()
    wire_in = fcntl.fcntl(0, fcntl.F_DUPFD_CLOEXEC, 3)
    wire_out = fcntl.fcntl(1, fcntl.F_DUPFD_CLOEXEC, 3)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    os.dup2(2, 1)
    try:
        # closefd=False: a reader thread may still block on the descriptor after serving ends
        yield os.fdopen(wire_in, "rb", closefd=False), os.fdopen(wire_out, "wb", closefd=False)
    finally:
        sys.stdout.flush()
        os.dup2(wire_out, 1)
        os.dup2(wire_in, 0)


@contextlib.asynccontextmanager
async def screened_stdio() -> AsyncIterator[tuple[Any, Any]]:
    """The SDK's stdio transport over this process's stdin/stdout, behind :func:`screen_line`:
    the (read, write) streams that ``Server.run`` takes."""
    with _claimed_std_streams() as (wire_in, wire_out):
        writer = _LineWriter(wire_out)
        lines = _ScreenedLines(wire_in, writer)
        async with stdio_server(stdin=lines, stdout=writer) as streams:  # type: ignore[arg-type]
            yield streams
