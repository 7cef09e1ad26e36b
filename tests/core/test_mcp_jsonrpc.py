"""The JSON-RPC screen in front of the MCP SDK: every line is forwarded or answered."""

from __future__ import annotations

import json
from typing import Any

import mcp.types as types
from hypothesis import given, settings
from hypothesis import strategies as st
from memwell.mcp.jsonrpc import (
    INVALID_PARAMS,
    INVALID_REQUEST,
    MAX_DEPTH,
    PARSE_ERROR,
    check_message,
    screen_line,
)

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


def nested(depth: int) -> object:
    """A value holding ``depth`` levels of arrays and objects."""
    value: object = 1
    for level in range(depth):
        value = [value] if level % 2 else {"k": value}
    return value


def call(arguments: object) -> dict[str, Any]:
    params = {"name": "memory_search", "arguments": arguments}
    return {"jsonrpc": "2.0", "id": 9, "method": "tools/call", "params": params}


def test_nesting_up_to_the_limit_passes_and_deeper_is_refused_with_the_id() -> None:
    # the envelope, params and arguments take 3 levels
    assert screen_line(json.dumps(call({"q": nested(MAX_DEPTH - 3)}))).forward
    reply = json.loads(screen_line(json.dumps(call({"q": nested(MAX_DEPTH - 2)}))).reply or "")
    assert reply["id"] == 9 and reply["error"]["code"] == INVALID_REQUEST
    assert f"deeper than {MAX_DEPTH}" in reply["error"]["message"]


def test_nesting_too_deep_to_parse_is_a_parse_error() -> None:
    reply = json.loads(screen_line("[" * 100_000 + "]" * 100_000).reply or "")
    assert reply["id"] is None and reply["error"]["code"] == PARSE_ERROR


CHARS = st.characters(codec=None, categories=["L", "N", "Zs", "Cs"])


@settings(max_examples=300, deadline=None)
@given(st.text(CHARS, max_size=12), st.text(CHARS, max_size=6))
def test_a_lone_surrogate_anywhere_gets_invalid_params_else_the_call_passes(
    value: str, key: str
) -> None:
    line = json.dumps(call({"query": value, key: value}))  # "\ud800" escapes in the JSON
    decoded = json.loads(line)["params"]["arguments"]
    lone = any(0xD800 <= ord(c) <= 0xDFFF for text in decoded for c in text + decoded[text])
    verdict = screen_line(line)
    if not lone:
        assert verdict.forward
        return
    reply = json.loads(verdict.reply or "")
    assert reply["id"] == 9 and reply["error"]["code"] == INVALID_PARAMS
    assert "lone surrogate" in reply["error"]["message"]


def test_a_surrogate_pair_escape_is_text_and_passes() -> None:
    pair = '{"jsonrpc":"2.0","id":1,"method":"ping","params":{"q":"\\ud83d\\ude00"}}'
    assert screen_line(pair).forward


def test_a_lone_surrogate_in_a_notification_is_dropped_without_reply() -> None:
    line = '{"jsonrpc":"2.0","method":"notifications/x","params":{"q":"\\ud800"}}'
    verdict = screen_line(line)
    assert not verdict.forward and verdict.reply is None
