"""The ``compress_context`` agent tool (served by the MCP server) and the token counter of a
memory's embedding model."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, get_args

from memwell.agent.tool_schemas import FAILURE_FIELDS
from memwell.context.compress import BudgetTooSmallError, Level, compress
from memwell.context.tokens import TokenCounter, counter_for
from memwell.context.transcript import turn_from_message
from memwell.contract.descriptors import READ_ONLY, AgentTool
from memwell.runtime.fallback import unwrap

COMPRESS_TOOL: dict[str, Any] = {
    "type": "function",
    "function": {
        "name": "compress_context",
        "description": (
            "Fit a conversation into a token budget: returns the level applied (none, light, "
            "summary or heavy, by context usage), the token counts and the turns to use "
            "instead, keeping every decision and open task (and preferences and requirements "
            "as the budget allows). A budget too small for the decisions and tasks gives an "
            "error, never a digest without them."
        ),
        "parameters": {
            "type": "object",
            "properties": {
                "messages": {
                    "type": "array",
                    "description": "The conversation, oldest first: {role, content} objects.",
                    "items": {
                        "type": "object",
                        "properties": {"role": {"type": "string"}, "content": {}},
                        "required": ["role", "content"],
                    },
                },
                "budget_tokens": {
                    "type": "integer",
                    "minimum": 1,
                    "description": "Tokens the conversation may use.",
                },
            },
            "required": ["messages", "budget_tokens"],
            "additionalProperties": False,
        },
    },
}

_COUNT = {"type": "integer", "minimum": 0}
COMPRESS_OUTPUT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "level": {"type": "string", "enum": list(get_args(Level))},
        "usage": {"type": "number", "minimum": 0},
        "budget": {"type": "integer", "minimum": 1},
        "tokens_before": _COUNT,
        "tokens_after": _COUNT,
        "fits": {"type": "boolean"},
        "tokenizer": {"type": "string"},
        "dropped_turns": _COUNT,
        "collapsed_outputs": _COUNT,
        "notes": {"type": "array", "items": {"type": "string"}},
        "turns": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {"role": {"type": "string"}, "content": {"type": "string"}},
                "required": ["role", "content"],
            },
        },
        "digest": {"type": ["object", "null"]},
        "untrusted_data": {"type": "boolean"},
        **FAILURE_FIELDS,
    },
    "required": ["untrusted_data"],
}
"""Every payload of ``compress_context``: the :class:`~.compress.Compressed` fields, or an
``error`` for bad arguments."""


def memory_token_counter(manager: object) -> TokenCounter:
    """The token counter of ``manager``'s embedding model (its tokenizer where it has one,
    else the estimate); the estimate when the provider cannot be selected."""
    runtime = getattr(unwrap(manager), "runtime", None)
    try:
        provider = getattr(runtime, "provider", None)
    except Exception:  # a provider that cannot be selected: count by the estimate
        provider = None
    return counter_for(provider)


def run_compress(arguments: Mapping[str, Any], counter: TokenCounter) -> dict[str, Any]:
    """Execute ``compress_context``; bad arguments, and a budget too small for the
    conversation's decisions and open tasks, give an ``error`` payload, never raise.

    The turns returned are conversation text (recalled memory among it), so the payload is
    marked ``untrusted_data`` like the memory tools'.
    """
    messages = arguments.get("messages")
    budget = arguments.get("budget_tokens")
    if not isinstance(messages, list) or not all(isinstance(m, Mapping) for m in messages):
        return {
            "error": "messages must be a list of {role, content} objects",
            "untrusted_data": True,
        }
    if isinstance(budget, bool) or not isinstance(budget, int) or budget < 1:
        error = f"budget_tokens must be a positive integer, got {budget!r}"
        return {"error": error, "untrusted_data": True}
    turns = [t for t in (turn_from_message(m) for m in messages) if t is not None]
    try:
        result = compress(turns, budget, counter=counter)
    except BudgetTooSmallError as exc:
        return {"error": str(exc), "reason": "budget_too_small", "untrusted_data": True}
    return {**result.to_dict(), "untrusted_data": True}


def compress_tool(manager: object) -> AgentTool:
    """``compress_context`` counting tokens with ``manager``'s embedding model."""
    counter = memory_token_counter(manager)
    return AgentTool(
        COMPRESS_TOOL,
        lambda arguments: run_compress(arguments, counter),
        READ_ONLY,
        COMPRESS_OUTPUT_SCHEMA,
    )
