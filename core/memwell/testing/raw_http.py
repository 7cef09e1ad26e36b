"""A raw HTTP/1.1 exchange for tests and benchmarks of local servers: send what a polite
client never would (a huge body, a foreign ``Host``) and stop as soon as the server answers.

Example::

    status, body = raw_exchange(8848, b"POST /mcp HTTP/1.1\\r\\nHost: x\\r\\n\\r\\n")
"""

from __future__ import annotations

import re
import select
import socket
import time
from collections.abc import Iterator


def raw_exchange(
    port: int, head: bytes, body: Iterator[bytes] | None = None, *, timeout: float = 60.0
) -> tuple[int, bytes]:
    """Send ``head`` to ``127.0.0.1:port``, then ``body`` for as long as the server reads it
    and has not answered; the status and body of its answer (``0`` and ``b""`` when it closed
    without one). Bounded by ``timeout`` seconds."""
    chunks = body if body is not None else iter(())
    received = b""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as sock:
        sock.sendall(head)
        sock.setblocking(False)
        pending = memoryview(next(chunks, b""))
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and not _complete(received):
            readable, writable, _ = select.select([sock], [sock] if pending else [], [], 1.0)
            if readable:
                try:
                    data = sock.recv(65536)
                except ConnectionResetError:
                    break
                if not data:
                    break
                received += data
            elif writable:
                try:
                    pending = pending[sock.send(pending) :] or memoryview(next(chunks, b""))
                except (BrokenPipeError, ConnectionResetError):
                    # The server stopped reading; what it answered may still wait unread.
                    pending = memoryview(b"")
    status_line, _, rest = received.partition(b"\r\n")
    if not status_line.startswith(b"HTTP/1.1 "):
        return 0, b""
    return int(status_line.split()[1]), rest.partition(b"\r\n\r\n")[2]


def _complete(received: bytes) -> bool:
    head, _, body = received.partition(b"\r\n\r\n")
    found = re.search(rb"content-length: (\d+)", head, re.I)
    return found is not None and len(body) >= int(found.group(1))
