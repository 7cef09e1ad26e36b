"""The HTTP guard's own rules and the token file (the real server: tests/reliability)."""

from __future__ import annotations

import socket
import stat
import threading
from pathlib import Path
from typing import Any

import anyio
import pytest
from memwell.contract.errors import ConfigError
from memwell.mcp.http_guard import GuardedHttp, PortInUseError, bind_http
from memwell.mcp.token import http_token


class Recorder:
    """An ASGI app that records the scopes it is called with."""

    def __init__(self) -> None:
        self.scopes: list[str] = []

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        self.scopes.append(scope["type"])


def call(guard: GuardedHttp, scope: dict[str, Any]) -> list[dict[str, Any]]:
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        raise AssertionError("the guard read a body it should have refused first")

    async def send(message: Any) -> None:
        sent.append(message)

    anyio.run(guard, scope, receive, send)
    return sent


def test_websockets_are_closed_and_lifespan_passes() -> None:
    app = Recorder()
    guard = GuardedHttp(app, port=8848, token="t" * 43)
    assert call(guard, {"type": "websocket", "headers": []}) == [
        {"type": "websocket.close", "code": 1008}
    ]
    call(guard, {"type": "lifespan"})
    assert app.scopes == ["lifespan"]


@pytest.mark.parametrize(
    ("headers", "status"),
    [
        ([(b"host", b"127.0.0.1:8848")], 401),
        ([(b"host", b"127.0.0.1:8848"), (b"authorization", b"Bearer " + b"u" * 43)], 401),
        ([(b"host", b"127.0.0.1:8848"), (b"host", b"127.0.0.1:8848")], 421),
        ([(b"host", b"127.0.0.1:8849"), (b"authorization", b"Bearer " + b"t" * 43)], 421),
        (
            [
                (b"host", b"localhost:8848"),
                (b"authorization", b"Bearer " + b"t" * 43),
                (b"content-length", b"-1"),
            ],
            400,
        ),
        (
            [
                (b"host", b"localhost:8848"),
                (b"authorization", b"bearer " + b"t" * 43),
                (b"content-length", b"1025"),
            ],
            413,
        ),
    ],
)
def test_refusals_come_before_the_body(headers: list[tuple[bytes, bytes]], status: int) -> None:
    app = Recorder()
    guard = GuardedHttp(app, port=8848, token="t" * 43, max_body=1024)
    sent = call(guard, {"type": "http", "method": "POST", "headers": headers})
    assert sent[0]["status"] == status
    assert (b"connection", b"close") in sent[0]["headers"]
    assert app.scopes == []


def test_a_taken_port_is_a_clear_error() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        with pytest.raises(PortInUseError, match="address already in use"):
            bind_http(taken.getsockname()[1])


def test_the_token_is_made_once_0600_and_shared_by_racing_starts(tmp_path: Path) -> None:
    path = tmp_path / "config" / "memwell" / "mcp-token"
    tokens: list[str] = []
    threads = [
        threading.Thread(target=lambda: tokens.append(http_token(path).value)) for _ in range(8)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(set(tokens)) == 1 and len(tokens) == 8
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert list(path.parent.iterdir()) == [path]  # no temporary file left
    again = http_token(path)
    assert again.value == tokens[0] and not again.created


def test_a_token_file_readable_by_others_is_set_back_to_0600(tmp_path: Path) -> None:
    path = tmp_path / "mcp-token"
    made = http_token(path)
    path.chmod(0o644)
    assert http_token(path).value == made.value
    assert stat.S_IMODE(path.stat().st_mode) == 0o600


@pytest.mark.parametrize("content", ["", "short", "x" * 40 + " spaces inside"])
def test_a_token_file_without_a_token_is_a_config_error(tmp_path: Path, content: str) -> None:
    path = tmp_path / "mcp-token"
    path.write_text(content)
    with pytest.raises(ConfigError, match="holds no token"):
        http_token(path)


def test_a_symlinked_token_file_is_refused(tmp_path: Path) -> None:
    target = tmp_path / "elsewhere"
    target.write_text("t" * 43)
    (tmp_path / "mcp-token").symlink_to(target)
    with pytest.raises(ConfigError, match="cannot read"):
        http_token(tmp_path / "mcp-token")
