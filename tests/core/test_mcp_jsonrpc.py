"""The JSON-RPC screen in front of the MCP SDK: every line is forwarded or answered."""

from __future__ import annotations

import json
from typing import Any

import mcp.types as types
from hypothesis import given, settings
from hypothesis import strategies as st
from memwell.mcp_jsonrpc import INVALID_REQUEST, PARSE_ERROR, check_message, screen_line

JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner),
    max_leaves=8,
)
ENVELOPE = st.fixed_dictionaries(
    {},
    optional={
        "jsonrpc": st.sampled_from(["2.0", "1.0", 2.0, None]),
        "id": st.one_of(st.integers(), st.text(max_size=4), st.none(), st.floats(), JSON),
        "method": st.one_of(st.sampled_from(["ping", "tools/list"]), JSON),
        "params": st.one_of(st.dictionaries(st.text(max_size=4), JSON), JSON),
        "result": JSON,
        "error": st.one_of(
            st.fixed_dictionaries({"code": st.integers(), "message": st.text()}), JSON
        ),
    },
)


def assert_error_reply(reply: Any, message: object) -> None:
    assert reply["jsonrpc"] == "2.0" and set(reply) == {"jsonrpc", "id", "error"}
    assert reply["error"]["code"] in (PARSE_ERROR, INVALID_REQUEST)
    assert reply["error"]["message"]
    if reply["id"] is not None:
        assert isinstance(message, dict) and reply["id"] == message["id"]


@settings(max_examples=400, deadline=None)
@given(st.one_of(ENVELOPE, JSON))
def test_every_message_is_forwarded_valid_or_answered(message: object) -> None:
    verdict = screen_line(json.dumps(message))
    if verdict.forward:
        assert check_message(message) is None
        types.jsonrpc_message_adapter.validate_python(message, by_name=False)
        assert verdict.reply is None
        return
    assert verdict.reply is not None
    reply = json.loads(verdict.reply)
    if isinstance(message, list) and message:
        assert isinstance(reply, list) and len(reply) == len(message)
        for item, error in zip(message, reply, strict=True):
            assert_error_reply(error, item)
    else:
        assert_error_reply(reply, message)


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=40))
def test_arbitrary_text_never_escapes_the_screen(line: str) -> None:
    verdict = screen_line(line)
    if not line.strip():
        assert not verdict.forward and verdict.reply is None
    elif not verdict.forward:
        assert verdict.reply is not None and json.loads(verdict.reply)


def test_a_null_id_request_is_refused_not_taken_for_a_notification() -> None:
    # The SDK decodes this as a notification (it ignores the id), which gets no reply.
    line = '{"jsonrpc": "2.0", "id": null, "method": "ping"}'
    reply = json.loads(screen_line(line).reply or "")
    assert reply == {
        "jsonrpc": "2.0",
        "id": None,
        "error": {"code": INVALID_REQUEST, "message": reply["error"]["message"]},
    }


def test_valid_requests_notifications_and_responses_pass() -> None:
    for message in (
        {"jsonrpc": "2.0", "id": 1, "method": "ping"},
        {"jsonrpc": "2.0", "id": "a", "method": "tools/list", "params": {}},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 7, "result": {}},
        {"jsonrpc": "2.0", "id": 8, "error": {"code": -1, "message": "no"}},
    ):
        assert screen_line(json.dumps(message)).forward, message
