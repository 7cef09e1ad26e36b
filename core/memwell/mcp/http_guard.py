"""The guard in front of ``memwell mcp --http``: every check runs before a body byte is read.

:class:`GuardedHttp` (ASGI middleware) refuses, in this order and without reading the body:

- a ``Host`` that is not this server's loopback address (421; DNS rebinding);
- an ``Origin`` other than this server's (403; a web page in a browser);
- a request without ``Authorization: Bearer <token>`` or with another token (401), unless the
  server runs without a token; tokens are compared in constant time;
- a ``Content-Length`` over the body cap, or not a number (413, 400).

A POST body is then read up to the cap, also when it comes chunked without a length (413 as
soon as it passes the cap; nothing more is read), and must pass
:func:`memwell.mcp.jsonrpc.screen_line` (400 with the JSON-RPC error otherwise). Each refusal's
body is a JSON-RPC error with ``id`` null.
"""

from __future__ import annotations

import hmac
import json
import socket
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from memwell.contract.errors import MemwellError
from memwell.mcp.jsonrpc import INVALID_REQUEST, screen_line

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
AsgiApp = Callable[[Scope, Receive, Send], Awaitable[None]]

HTTP_HOST = "127.0.0.1"
MAX_BODY_BYTES = 16 * 1024 * 1024
"""The largest request body served (a 16 MiB write, the writer's own ceiling, fits escaped
into less only when it is mostly plain text; larger bodies are refused with 413)."""
_LOOPBACK_NAMES = ("127.0.0.1", "localhost", "[::1]")


class PortInUseError(MemwellError):
    """The HTTP port cannot be bound (taken by another process, or not allowed)."""


def bind_http(port: int) -> socket.socket:
    """A socket listening on ``127.0.0.1:port`` (``0`` picks a free port).

    Connections wait in the backlog until the server accepts them, so binding first lets
    ``memwell mcp --http`` fail at once on a taken port, before it opens the index.

    :raises PortInUseError: the port cannot be bound.
    """
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        sock.bind((HTTP_HOST, port))
        sock.listen(128)
    except OSError as exc:
        sock.close()
        reason = exc.strerror or str(exc)
        raise PortInUseError(
            f"cannot listen on {HTTP_HOST}:{port}: {reason.lower()} (choose another --port)"
        ) from exc
    return sock


class _Refused(Exception):
    def __init__(self, status: int, message: str, headers: list[tuple[bytes, bytes]]) -> None:
        super().__init__(message)
        self.status, self.message, self.headers = status, message, headers


class GuardedHttp:
    """ASGI middleware guarding ``app`` on ``127.0.0.1:port`` (see the module docstring).

    :param token: the bearer token clients must send; ``None`` serves without one.
    :param max_body: the largest body read, in bytes.
    """

    def __init__(
        self, app: AsgiApp, *, port: int, token: str | None, max_body: int = MAX_BODY_BYTES
    ) -> None:
        self.app = app
        self.max_body = max_body
        self._token = token.encode("utf-8") if token is not None else None
        self._hosts = {f"{name}:{port}" for name in _LOOPBACK_NAMES}
        self._origins = {f"http://{host}" for host in self._hosts}

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await self.app(scope, receive, send)
            return
        if scope["type"] != "http":  # a websocket: MCP has none, so nothing unchecked gets in
            await send({"type": "websocket.close", "code": 1008})
            return
        try:
            self._check_headers(_headers(scope))
            if scope.get("method") != "POST":
                await self.app(scope, receive, send)
                return
            body = await self._read_body(receive)
        except _Refused as refused:
            # the body is left unread, so the connection must not carry another request
            extra = [(b"connection", b"close"), *refused.headers]
            await _respond(send, refused.status, _rpc_error(refused.message), extra)
            return
        if body is None:  # the client went away
            return
        verdict = screen_line(body.decode("utf-8", errors="replace"))
        if verdict.reply is None:
            await self.app(scope, _replay(bytes(body), receive), send)
            return
        await _respond(send, 400, verdict.reply.encode("utf-8"))

    def _check_headers(self, headers: dict[bytes, list[bytes]]) -> None:
        hosts = headers.get(b"host", [])
        if len(hosts) != 1 or hosts[0].decode("latin-1").lower() not in self._hosts:
            raise _Refused(421, "Host header not allowed: this server answers on loopback only", [])
        origins = headers.get(b"origin", [])
        if origins and (len(origins) > 1 or origins[0].decode("latin-1") not in self._origins):
            raise _Refused(403, "Origin not allowed", [])
        if self._token is not None and not self._authorized(headers.get(b"authorization", [])):
            challenge = [(b"www-authenticate", b'Bearer realm="memwell"')]
            raise _Refused(401, "Unauthorized: send Authorization: Bearer <token>", challenge)
        lengths = headers.get(b"content-length", [])
        if not lengths:
            return
        if len(lengths) > 1 or not lengths[0].isdigit():
            raise _Refused(400, "Content-Length is not a number", [])
        if int(lengths[0]) > self.max_body:
            raise _Refused(413, f"Request body over {self.max_body} bytes", [])

    def _authorized(self, values: list[bytes]) -> bool:
        assert self._token is not None
        if len(values) != 1:
            return False
        scheme, _, presented = values[0].strip().partition(b" ")
        if scheme.lower() != b"bearer":
            return False
        return hmac.compare_digest(presented.strip(), self._token)

    async def _read_body(self, receive: Receive) -> bytearray | None:
        """The body, read up to the cap; ``None`` when the client disconnects."""
        body = bytearray()
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                return None
            body += message.get("body", b"")
            if len(body) > self.max_body:
                raise _Refused(413, f"Request body over {self.max_body} bytes", [])
            if not message.get("more_body", False):
                return body


def _headers(scope: Scope) -> dict[bytes, list[bytes]]:
    found: dict[bytes, list[bytes]] = {}
    for name, value in scope.get("headers", []):
        found.setdefault(bytes(name).lower(), []).append(bytes(value))
    return found


def _rpc_error(message: str) -> bytes:
    error = {"jsonrpc": "2.0", "id": None, "error": {"code": INVALID_REQUEST, "message": message}}
    return json.dumps(error).encode("utf-8")


async def _respond(
    send: Send, status: int, body: bytes, extra: list[tuple[bytes, bytes]] | None = None
) -> None:
    headers = [(b"content-type", b"application/json"), (b"content-length", b"%d" % len(body))]
    await send(
        {"type": "http.response.start", "status": status, "headers": headers + (extra or [])}
    )
    await send({"type": "http.response.body", "body": body})


def _replay(body: bytes, receive: Receive) -> Receive:
    """A ``receive`` that gives the already read ``body`` first, then defers to ``receive``."""
    pending = [{"type": "http.request", "body": body, "more_body": False}]

    async def replayed() -> Message:
        return pending.pop() if pending else await receive()

    return replayed
