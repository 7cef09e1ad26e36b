"""The result and status records: the checks a search hit keeps, and dumps and schemas in the
shape (keys, key order, JSON types) the pydantic models gave the CLI, tools and MCP."""

from __future__ import annotations

import datetime as dt
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import msgspec
import numpy as np
import pytest
from memwell.agent.flush import FlushPlan
from memwell.agent.session_capture import SessionSaveResult
from memwell.agent.write_tools import RECENT_OUTPUT_SCHEMA, WRITE_OUTPUT_SCHEMA
from memwell.contract.models import (
    CacheStatus,
    FallbackStatus,
    FtsStatus,
    MemorySearchResult,
    MemoryStatus,
    ProbeResult,
    ReadFileResult,
    RecallCacheStatus,
    RecallTierStatus,
    RecallTrackingStatus,
    SearchDegradation,
    SourceCount,
    SyncProgress,
    VectorStatus,
)
from memwell.contract.records import Record
from memwell.curation.promotion import PromotionCandidate, PromotionResult, SkippedCandidate
from memwell.writing.results import RecentFile, WriteResult


def hit(**changes: Any) -> MemorySearchResult:
    fields: dict[str, Any] = {
        "path": "memory/a.md",
        "start_line": 1,
        "end_line": 3,
        "score": 0.5,
        "snippet": "x",
    }
    return MemorySearchResult(**{**fields, **changes})


# -- MemorySearchResult's checks ----------------------------------------------------------


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"start_line": 0}, "lines are 1-based, got 0-3"),
        ({"end_line": -2}, "lines are 1-based, got 1--2"),
        ({"score": 1.5}, r"score 1\.5 is not in \[0, 1\]"),
        ({"score": -0.01}, r"score -0\.01 is not in \[0, 1\]"),
        ({"score": float("nan")}, r"score nan is not in \[0, 1\]"),
        ({"score": "0.5"}, "a score must be a number, got '0.5'"),
        ({"start_line": 1.5}, "a line number must be an integer, got 1.5"),
        ({"end_line": True}, "a line number must be an integer, got True"),
    ],
)
def test_a_bad_line_or_score_is_refused_at_construction(
    changes: dict[str, Any], message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        hit(**changes)


def test_a_copy_and_a_conversion_are_checked_too() -> None:
    with pytest.raises(ValueError, match="not in"):
        hit().model_copy(update={"score": 2.0})
    with pytest.raises(msgspec.ValidationError, match="lines are 1-based"):
        msgspec.convert({**hit().model_dump(), "start_line": 0}, MemorySearchResult)


def test_number_like_values_are_stored_as_plain_numbers() -> None:
    result = hit(start_line=np.int64(2), end_line=np.int32(4), score=np.float32(0.25))
    assert (type(result.start_line), type(result.end_line), type(result.score)) == (
        int,
        int,
        float,
    )
    assert json.dumps(hit(score=1).model_dump()) == json.dumps(
        {
            "path": "memory/a.md",
            "start_line": 1,
            "end_line": 3,
            "score": 1.0,
            "snippet": "x",
            "source": "memory",
            "citation": None,
            "pinned": False,  # added with the vault (issue 42)
        }
    )


def test_a_hit_is_immutable_and_hashable() -> None:
    with pytest.raises(AttributeError):
        hit().score = 0.9  # type: ignore[misc]
    assert hit() == hit() and len({hit(), hit(), hit(score=0.6)}) == 2
    with pytest.raises(TypeError):
        MemorySearchResult("memory/a.md", 1, 1, 0.5, "x")  # type: ignore[misc]


# -- dumps in the old shape -----------------------------------------------------------------

_FALLBACK = FallbackStatus(from_="openai", to="local", reason="down")
_CANDIDATE = PromotionCandidate(
    key="k",
    path="memory/2026-12-01.md",
    start_line=1,
    end_line=2,
    snippet="s",
    score=0.5,
    components={"frequency": 0.1},
    recall_count=1,
    grounded_count=0,
    daily_count=1,
    signal_count=1,
    avg_score=0.5,
    max_score=0.5,
    unique_queries=1,
    recall_days=["2026-12-01"],
    concept_tags=[],
    age_days=1.0,
    last_recalled_at="t",
)
_CANDIDATE_DUMP = {
    "key": "k",
    "path": "memory/2026-12-01.md",
    "start_line": 1,
    "end_line": 2,
    "snippet": "s",
    "score": 0.5,
    "components": {"frequency": 0.1},
    "recall_count": 1,
    "grounded_count": 0,
    "daily_count": 1,
    "signal_count": 1,
    "avg_score": 0.5,
    "max_score": 0.5,
    "unique_queries": 1,
    "recall_days": ["2026-12-01"],
    "concept_tags": [],
    "age_days": 1.0,
    "last_recalled_at": "t",
    "promoted_at": None,
}
_FALLBACK_DUMP = {"from": "openai", "to": "local", "reason": "down"}

# Each record with what ``model_dump(mode="json", by_alias=True)`` of the pydantic model was.
OLD_DUMPS: list[tuple[Record, dict[str, Any]]] = [
    (
        hit(citation="memory/a.md#L1-L3"),
        {
            "path": "memory/a.md",
            "start_line": 1,
            "end_line": 3,
            "score": 0.5,
            "snippet": "x",
            "source": "memory",
            "citation": "memory/a.md#L1-L3",
            "pinned": False,  # added with the vault (issue 42)
        },
    ),
    (ReadFileResult(path="a.md", text="t", missing=True), {"path": "a.md", "text": "t"}),
    (ProbeResult(ok=False, error="e"), {"ok": False, "error": "e"}),
    (
        SyncProgress(completed=1, total=2),
        {"completed": 1, "total": 2, "label": None, "chunks": 0, "total_chunks": 0},
    ),
    (_FALLBACK, _FALLBACK_DUMP),
    (
        MemoryStatus(
            backend="builtin",
            provider="local",
            workspace_dir="/w",
            source_counts=[SourceCount(source="memory", files=1, chunks=2)],
            cache=CacheStatus(enabled=True),
            recall_cache=RecallCacheStatus(enabled=True, semantic=RecallTierStatus()),
            recall_tracking=RecallTrackingStatus(enabled=True, path="p"),
            fts=FtsStatus(enabled=True, available=True),
            vector=VectorStatus(enabled=True, available=False),
            fallback=_FALLBACK,
            provider_fallback=_FALLBACK,
            degraded=SearchDegradation(mode="fts-only", reason="r"),
            custom={"a": {"b": 1}},
        ),
        {
            "backend": "builtin",
            "provider": "local",
            "model": None,
            "requested_provider": None,
            "search_mode": "hybrid",
            "provider_unavailable_reason": None,
            "files": 0,
            "chunks": 0,
            "vectors": None,
            "dirty": False,
            "workspace_dir": "/w",
            "db_path": None,
            "extra_paths": [],
            "sources": ["memory"],
            "source_counts": [{"source": "memory", "files": 1, "chunks": 2}],
            "cache": {"enabled": True, "entries": 0, "max_entries": None},
            "recall_cache": {
                "enabled": True,
                "reason": None,
                "entries": 0,
                "bytes": 0,
                "max_entries": 0,
                "max_bytes": 0,
                "evictions": 0,
                "invalidations": 0,
                "exact": {"hits": 0, "misses": 0},
                "semantic": {"hits": 0, "misses": 0},
                "semantic_off": None,
                "temporal": None,  # added with the temporal tier (issue 42)
                "backend_searches": 0,
                "batch_shared": 0,  # near-duplicates of a batch sharing a retrieval
                "stale_served": 0,
            },
            "recall_tracking": {
                "enabled": True,
                "path": "p",
                "entries": 0,
                "promoted": 0,
                "error": None,
            },
            "fts": {"enabled": True, "available": True, "tokenizer": "unicode61", "error": None},
            "vector": {
                "enabled": True,
                "available": False,
                "engine": None,
                "extension_path": None,
                "load_error": None,
                "dims": None,
            },
            "fallback": _FALLBACK_DUMP,
            "provider_fallback": _FALLBACK_DUMP,
            "degraded": {"mode": "fts-only", "reason": "r"},
            "last_sync_error": None,
            "unreadable": [],
            "custom": {"a": {"b": 1}},
            "query_max_chars": None,
        },
    ),
    (
        WriteResult(
            path="memory/a.md",
            operation="append",
            start_line=1,
            end_line=2,
            bytes_written=3,
            file_bytes=4,
            indexed=True,
        ),
        {
            "path": "memory/a.md",
            "operation": "append",
            "start_line": 1,
            "end_line": 2,
            "bytes_written": 3,
            "file_bytes": 4,
            "created": False,
            "heading_created": False,
            "redacted": False,
            "indexed": True,
            "index_error": None,
            "superseded": [],
            "supersede_error": None,
            "audit_error": None,  # added with the audit log (issue 42)
        },
    ),
    (
        RecentFile(path="a.md", modified=dt.datetime(2026, 12, 2, 7, 0, tzinfo=dt.UTC), bytes=5),
        {"path": "a.md", "modified": "2026-12-02T07:00:00Z", "bytes": 5},
    ),
    (
        FlushPlan(
            flush=False,
            reason="r",
            tokens_used=1,
            context_window=2,
            threshold_tokens=1,
            cycle="0",
            session_key="k",
        ),
        {
            "flush": False,
            "reason": "r",
            "tokens_used": 1,
            "context_window": 2,
            "threshold_tokens": 1,
            "cycle": "0",
            "session_key": "k",
            "target": None,
            "prompt": None,
            "system_prompt": None,
            "silent_token": "NO_REPLY",
        },
    ),
    (
        SessionSaveResult(
            path="p", slug="s", slug_source="time", messages=1, total_messages=1, indexed=False
        ),
        {
            "path": "p",
            "slug": "s",
            "slug_source": "time",
            "messages": 1,
            "total_messages": 1,
            "skipped_lines": 0,
            "redacted": False,
            "indexed": False,
            "index_error": None,
            "notes": [],
        },
    ),
    (_CANDIDATE, _CANDIDATE_DUMP),
    (
        PromotionResult(
            dry_run=True,
            memory_file="MEMORY.md",
            heading="h",
            candidates=[_CANDIDATE],
            skipped=[SkippedCandidate(key="k", source="s", reason="r")],
        ),
        {
            "dry_run": True,
            "memory_file": "MEMORY.md",
            "heading": "h",
            "candidates": [_CANDIDATE_DUMP],
            "appended": [],
            "skipped": [{"key": "k", "source": "s", "reason": "r"}],
            "lines": [],
        },
    ),
]


@pytest.mark.parametrize(
    ("record", "old"), OLD_DUMPS, ids=[type(record).__name__ for record, _ in OLD_DUMPS]
)
def test_json_dump_is_the_old_payload_byte_for_byte(record: Record, old: dict[str, Any]) -> None:
    assert json.dumps(record.model_dump(mode="json", by_alias=True)) == json.dumps(old)


def test_python_dump_keeps_field_names_and_python_values() -> None:
    assert _FALLBACK.model_dump() == {"from_": "openai", "to": "local", "reason": "down"}
    stamp = dt.datetime(2026, 12, 2, 7, 0, tzinfo=dt.UTC)
    assert RecentFile(path="a.md", modified=stamp, bytes=5).model_dump()["modified"] is stamp
    assert FallbackStatus.model_validate(_FALLBACK_DUMP) == _FALLBACK


def test_status_dumps_do_not_share_default_lists() -> None:
    first = MemoryStatus(backend="b", provider="p", workspace_dir="/w")
    first.extra_paths.append("notes")
    assert MemoryStatus(backend="b", provider="p", workspace_dir="/w").extra_paths == []
    assert PromotionResult(dry_run=True, memory_file="m", heading="h", candidates=[]).skipped == []


# -- the published schemas of memory_write and memory_recent -----------------------------------

# pydantic 2.14's ``model_json_schema()`` of the two models, as the MCP server published it.
OLD_WRITE_PROPERTIES = {
    "path": {"title": "Path", "type": "string"},
    "operation": {
        "enum": ["append", "create", "replace", "supersede"],
        "title": "Operation",
        "type": "string",
    },
    "start_line": {"title": "Start Line", "type": "integer"},
    "end_line": {"title": "End Line", "type": "integer"},
    "bytes_written": {"title": "Bytes Written", "type": "integer"},
    "file_bytes": {"title": "File Bytes", "type": "integer"},
    "created": {"default": False, "title": "Created", "type": "boolean"},
    "heading_created": {"default": False, "title": "Heading Created", "type": "boolean"},
    "redacted": {"default": False, "title": "Redacted", "type": "boolean"},
    "indexed": {"title": "Indexed", "type": "boolean"},
    "index_error": {
        "anyOf": [{"type": "string"}, {"type": "null"}],
        "default": None,
        "title": "Index Error",
    },
    "audit_error": {  # added with the audit log (issue 42)
        "anyOf": [{"type": "string"}, {"type": "null"}],
        "default": None,
        "title": "Audit Error",
    },
}
OLD_RECENT_FILE = {
    "description": "A memory file and when it last changed (UTC).",
    "properties": {
        "path": {"title": "Path", "type": "string"},
        "modified": {"format": "date-time", "title": "Modified", "type": "string"},
        "bytes": {"title": "Bytes", "type": "integer"},
    },
    "required": ["path", "modified", "bytes"],
    "title": "RecentFile",
    "type": "object",
}


def test_tool_schemas_are_the_ones_pydantic_gave() -> None:
    assert json.dumps(RecentFile.model_json_schema()) == json.dumps(OLD_RECENT_FILE)
    assert RECENT_OUTPUT_SCHEMA["properties"]["files"]["items"] == OLD_RECENT_FILE
    write = WriteResult.model_json_schema()
    superseded = write["properties"].pop("superseded")
    assert write["properties"].pop("supersede_error")["default"] is None
    assert json.dumps(write["properties"]) == json.dumps(OLD_WRITE_PROPERTIES)
    assert superseded["type"] == "array" and superseded["items"]["title"] == "Supersession"
    assert superseded["items"]["required"] == [
        "path",
        "line",
        "text",
        "by",
        "attribute",
        "old_value",
        "new_value",
    ]
    assert write["required"] == [
        "path",
        "operation",
        "start_line",
        "end_line",
        "bytes_written",
        "file_bytes",
        "indexed",
    ]
    assert {k: WRITE_OUTPUT_SCHEMA["properties"][k] for k in OLD_WRITE_PROPERTIES} == (
        OLD_WRITE_PROPERTIES
    )


def test_a_field_type_without_a_schema_is_named() -> None:
    class Odd(Record, kw_only=True):
        values: dict[str, int]

    with pytest.raises(TypeError, match=r"Odd\.values: no JSON Schema"):
        Odd.model_json_schema()


# -- import cost ------------------------------------------------------------------------------

_PROBE = """
import sys
from memwell.cli.main import main

try:
    main(sys.argv[1:])
except SystemExit as exc:
    assert not exc.code, exc.code
print(sorted({"pydantic", "packaging", "importlib.metadata"} & set(sys.modules)))
"""


@pytest.mark.parametrize(
    "args",
    [
        ["--help"],
        ["--provider", "none", "search", "which port does amber listen on"],
        ["search", "which port does amber listen on"],
    ],
    ids=["help", "keyword search", "hybrid search"],
)
def test_the_cli_start_up_paths_import_no_pydantic(tmp_path: Path, args: list[str]) -> None:
    """``memwell --help`` and one-shot keyword and hybrid searches (indexing first) load no
    pydantic (importing it and building its models was a fifth of a second of start-up), no
    ``packaging`` (first-party plugins declare plain API ranges) and no ``importlib.metadata``
    (plugins are found from ``entry_points.txt``)."""
    (tmp_path / "MEMORY.md").write_text("The amber service listens on port 8443.\n")
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "XDG_CACHE_HOME": str(tmp_path / "cache")}
    run = subprocess.run(
        [sys.executable, "-c", _PROBE, "-w", str(tmp_path), *args],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip().splitlines()[-1] == "[]"
