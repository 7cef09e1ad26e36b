"""The ``memory_reflect`` agent tool: run the Reflection Engine from an agent (MCP)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from memwell.agent.tool_args import refusal
from memwell.agent.tool_schemas import FAILURE_FIELDS
from memwell.contract.descriptors import AgentTool, ToolHints
from memwell.organise.reflection import reflect
from memwell.writing.writer import MemoryWriter

REFLECT_TOOL: dict[str, Any] = {
    "type": "function",
    "function": {
        "name": "memory_reflect",
        "description": (
            "Organise memory: rebuild the entity pages (memory/graph/entities/), the graph "
            "index, the procedures (memory/procedures/) and the decay scores from the notes, "
            "writing only what changed. Returns what was added, changed and retired."
        ),
        "parameters": {"type": "object", "properties": {}, "additionalProperties": False},
    },
}
_LIST = {"type": "array", "items": {"type": "string"}}
REFLECT_OUTPUT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "reflected": {"type": "boolean"},
        "notes": {"type": "integer"},
        "entities": {"type": "integer"},
        "procedures": {"type": "integer"},
        "edges": {"type": "integer"},
        "added": _LIST,
        "changed": _LIST,
        "retired": _LIST,
        "superseded": {"type": "integer"},
        "left_alone": _LIST,
        "scores_changed": {"type": "boolean"},
        "indexed": {"type": "boolean"},
        "index_error": {"type": ["string", "null"]},
        "audit_errors": _LIST,
        "extractor": {"type": "string"},
        "extractor_note": {"type": ["string", "null"]},
        **FAILURE_FIELDS,
    },
}


def run_reflect(writer: MemoryWriter, arguments: Mapping[str, Any]) -> dict[str, Any]:
    """Execute ``memory_reflect``; a failure gives an ``error`` payload, never raises."""
    if arguments:
        names = ", ".join(sorted(arguments))
        return {"reflected": False, "error": f"memory_reflect takes no arguments: {names}"}
    try:
        return {"reflected": True, **reflect(writer).to_dict()}
    except Exception as exc:
        return refusal("memory_reflect", exc, reflected=False)


def reflect_tool(writer: MemoryWriter) -> AgentTool:
    """``memory_reflect`` on ``writer`` (offered where the write tools are)."""
    hints = ToolHints(read_only=False, idempotent=True)
    return AgentTool(
        REFLECT_TOOL, lambda arguments: run_reflect(writer, arguments), hints, REFLECT_OUTPUT_SCHEMA
    )
