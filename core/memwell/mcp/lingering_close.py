"""Lingering close for ``memwell mcp --http``: a refused request's answer reaches its client.

A server that closes a connection while its client is still sending (a 413 for a body over the
cap, answered before the body is read) leaves unread bytes behind; the kernel answers them with
a reset, and the client's kernel then drops the answer it has not read yet (RFC 9112 §9.6).
:func:`lingering` wraps the HTTP protocol so that closing half-closes instead: the answer goes
out followed by FIN, and what the client still sends is read and thrown away (never held) for at
most :data:`LINGER_S` seconds or :data:`LINGER_BYTES` bytes before the connection closes.
"""

from __future__ import annotations

import asyncio
from typing import Any, cast

LINGER_S = 2.0
"""How long a closing connection keeps reading (and discarding) what its client still sends."""
LINGER_BYTES = 64 * 1024 * 1024
"""How much a closing connection discards before it resets the connection instead."""


def lingering(inner: type[asyncio.Protocol]) -> type[asyncio.Protocol]:
    """``inner`` (a protocol class built with keyword arguments, as uvicorn's are) whose
    connections close by half-closing and draining."""

    class Lingering(_LingeringProtocol):
        inner_class = inner

    return Lingering


class _LingeringProtocol(asyncio.Protocol):
    inner_class: type[asyncio.Protocol]

    def __init__(self, **kwargs: Any) -> None:
        self._inner = self.inner_class(**kwargs)
        self._transport: asyncio.Transport | None = None
        self._discarded: int | None = None  # None until the inner protocol closes
        self._timer: asyncio.TimerHandle | None = None

    @property
    def lingering(self) -> bool:
        return self._discarded is not None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self._transport = cast(asyncio.Transport, transport)
        self._inner.connection_made(cast(asyncio.Transport, _HalfClosing(self._transport, self)))

    def data_received(self, data: bytes) -> None:
        if self._discarded is None:
            self._inner.data_received(data)
            return
        self._discarded += len(data)
        if self._discarded > LINGER_BYTES and self._transport is not None:
            self._transport.abort()

    def eof_received(self) -> bool | None:
        if self._discarded is not None:
            return False  # the client is done too: the transport closes
        return self._inner.eof_received()

    def connection_lost(self, exc: Exception | None) -> None:
        if self._timer is not None:
            self._timer.cancel()
        self._inner.connection_lost(exc)

    def pause_writing(self) -> None:
        self._inner.pause_writing()

    def resume_writing(self) -> None:
        self._inner.resume_writing()

    def linger(self) -> None:
        """Send what is buffered, then FIN; discard what still comes; close within LINGER_S."""
        transport = self._transport
        if transport is None or self._discarded is not None or transport.is_closing():
            return
        self._discarded = 0
        if not transport.can_write_eof():
            transport.close()
            return
        transport.write_eof()
        transport.resume_reading()
        self._timer = asyncio.get_running_loop().call_later(LINGER_S, transport.close)


class _HalfClosing:
    """The transport the inner protocol sees: ``close`` lingers, everything else passes."""

    def __init__(self, transport: asyncio.Transport, owner: _LingeringProtocol) -> None:
        self._transport = transport
        self._owner = owner

    def close(self) -> None:
        self._owner.linger()

    def is_closing(self) -> bool:
        return self._owner.lingering or self._transport.is_closing()

    def pause_reading(self) -> None:
        if not self._owner.lingering:
            self._transport.pause_reading()

    def resume_reading(self) -> None:
        if not self._owner.lingering:
            self._transport.resume_reading()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._transport, name)
