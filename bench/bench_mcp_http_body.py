"""Peak memory of ``memwell mcp --http`` around one oversized POST (issue 38 item 2).

    python bench/bench_mcp_http_body.py [--memwell PATH] [--mb 300] [--token-free]

Starts the server on 127.0.0.1 (port 0, keyword-only, a three-file workspace), sends one
``--mb`` MB body with a ``Content-Length`` and one chunked without it, and prints the
server's peak RSS (``VmHWM``) before and after each, with the status it answered. Bounded:
one body of each kind, a 120 s deadline each. ``--memwell`` runs another install (e.g. the
main branch's, whose server asks no token: pass ``--token-free`` there).
"""

from __future__ import annotations

import argparse
import os
import re
import select
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

from memwell.testing.conformance import write_workspace

CHUNK = b"x" * (1024 * 1024)
DEADLINE_S = 120.0


def peak_rss_mb(pid: int) -> float:
    found = re.search(r"^VmHWM:\s+(\d+) kB", Path(f"/proc/{pid}/status").read_text(), re.M)
    assert found is not None
    return int(found.group(1)) / 1024


def send(port: int, head: bytes, body: Iterator[bytes]) -> str:
    """Send ``head`` and ``body`` while the server reads; the status line it answered."""
    with socket.create_connection(("127.0.0.1", port), timeout=DEADLINE_S) as sock:
        sock.sendall(head)
        sock.setblocking(False)
        pending, received = memoryview(next(body, b"")), b""
        deadline = time.monotonic() + DEADLINE_S
        while time.monotonic() < deadline and b"\r\n" not in received:
            readable, writable, _ = select.select([sock], [sock] if pending else [], [], 1.0)
            try:
                if readable:
                    data = sock.recv(65536)
                    if not data:
                        break
                    received += data
                elif writable:
                    pending = pending[sock.send(pending) :] or memoryview(next(body, b""))
            except (BrokenPipeError, ConnectionResetError):
                break
    return received.partition(b"\r\n")[0].decode("latin-1") or "(connection closed)"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--memwell", default=str(Path(sys.executable).with_name("memwell")))
    parser.add_argument("--mb", type=int, default=300)
    parser.add_argument("--token-free", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        workspace = write_workspace(Path(tmp) / "ws")
        env = {k: v for k, v in os.environ.items() if not k.startswith("MEMWELL_")}
        env |= {"MEMWELL_LOAD_PLUGINS": "builtin", "XDG_CONFIG_HOME": f"{tmp}/xdg"}
        serve = ["mcp", "--no-watch", "--http", "--port", "0"]
        proc = subprocess.Popen(
            [args.memwell, "-w", str(workspace), "--provider", "none", *serve],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
        try:
            assert proc.stderr is not None
            port = 0
            while not port:
                found = re.search(r"127\.0\.0\.1:(\d+)/mcp", proc.stderr.readline())
                port = int(found.group(1)) if found else 0
            token_file = Path(tmp) / "xdg" / "memwell" / "mcp-token"
            auth = "" if args.token_free else f"Bearer {token_file.read_text().strip()}"
            head = (
                f"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nAuthorization: {auth}\r\n"
                "Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n"
            )
            size = args.mb * len(CHUNK)
            framings = {
                "content-length": (
                    f"Content-Length: {size}\r\n\r\n",
                    lambda: (CHUNK for _ in range(args.mb)),
                ),
                "chunked": (
                    "Transfer-Encoding: chunked\r\n\r\n",
                    lambda: (b"100000\r\n" + CHUNK + b"\r\n" for _ in range(args.mb)),
                ),
            }
            for name, (extra, body) in framings.items():
                before = peak_rss_mb(proc.pid)
                status = send(port, (head + extra).encode("latin-1"), body())
                after = peak_rss_mb(proc.pid)
                print(
                    f"{name:15} {args.mb} MB body: {status!r}; peak RSS {before:.0f} -> "
                    f"{after:.0f} MB (+{after - before:.0f} MB)"
                )
        finally:
            proc.terminate()
            proc.wait(timeout=30)


if __name__ == "__main__":
    main()
