"""Output schemas of ``memory_search`` and ``memory_get``: every payload they return, errors
and ``disabled`` payloads included (the MCP server declares them; clients validate).
:data:`FAILURE_FIELDS` are the fields any tool's failure payload may carry."""

from __future__ import annotations

from typing import Any

_NULLABLE_STRING = {"type": ["string", "null"]}
FAILURE_FIELDS: dict[str, Any] = {
    "disabled": {"type": "boolean"},
    "unavailable": {"type": "boolean"},
    "error": {"type": "string"},
    "reason": {"type": "string"},
    "warning": {"type": "string"},
    "action": {"type": "string"},
}

SEARCH_OUTPUT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "results": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "path": {"type": "string"},
                    "start_line": {"type": "integer"},
                    "end_line": {"type": "integer"},
                    "score": {"type": "number"},
                    "snippet": {"type": "string"},
                    "source": {"type": "string"},
                    "citation": {"type": "string"},
                    "pinned": {"type": "boolean"},
                },
                "required": ["path", "start_line", "end_line", "score", "snippet"],
            },
        },
        "provider": _NULLABLE_STRING,
        "model": _NULLABLE_STRING,
        "mode": _NULLABLE_STRING,
        "fallback": {"type": ["object", "null"]},
        "citations": {"type": "string", "enum": ["on", "off"]},
        "untrusted_data": {"type": "boolean"},
        "notice": {"type": "string"},
        **FAILURE_FIELDS,
    },
    "required": ["results"],
}

GET_OUTPUT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "path": {"type": "string"},
        "text": {"type": "string"},
        "start_line": {"type": ["integer", "null"]},
        "end_line": {"type": ["integer", "null"]},
        "untrusted_data": {"type": "boolean"},
        **FAILURE_FIELDS,
    },
    "required": ["path", "text"],
}
