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
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

from memwell.testing.conformance import write_workspace
from memwell.testing.raw_http import raw_exchange

CHUNK = b"x" * (1024 * 1024)
DEADLINE_S = 120.0


def peak_rss_mb(pid: int) -> float:
    found = re.search(r"^VmHWM:\s+(\d+) kB", Path(f"/proc/{pid}/status").read_text(), re.M)
    assert found is not None
    return int(found.group(1)) / 1024


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
            framings: dict[str, tuple[str, Callable[[], Iterator[bytes]]]] = {
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
                status, _ = raw_exchange(
                    port, (head + extra).encode("latin-1"), body(), timeout=DEADLINE_S
                )
                after = peak_rss_mb(proc.pid)
                answer = status or "none (closed)"
                print(
                    f"{name:15} {args.mb} MB body: status {answer}; peak RSS {before:.0f} -> "
                    f"{after:.0f} MB (+{after - before:.0f} MB)"
                )
        finally:
            proc.terminate()
            proc.wait(timeout=30)


if __name__ == "__main__":
    main()
