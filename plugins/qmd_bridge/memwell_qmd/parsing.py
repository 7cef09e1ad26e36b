"""Parsing qmd's output: search JSON (robust to noise), snippet headers, ``qmd status`` text."""

from __future__ import annotations

import json
import logging
import math
import re
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import unquote

from .errors import QmdOutputError

log = logging.getLogger(__name__)

_NO_RESULTS = re.compile(
    r"^\s*(?:\[[^\]]*\]\s*)?(?:(?:warn|warning|info|error|qmd):\s*)?"
    r"no results found(?: above minimum score threshold)?\.?\s*$",
    re.I,
)
_HEADER = re.compile(r"^@@ -(\d+),(\d+) @@[^\n]*(?:\n|$)")
_DOCID = re.compile(r"^#?([0-9a-f]{6,64})$")
_URI = re.compile(r"^qmd://([^/?#]+)/([^?#]+)")
_VERSION = re.compile(r"\bqmd (\d+)\.(\d+)\.(\d+)")


@dataclass(frozen=True)
class QmdHit:
    """One search hit as qmd reported it, with its 1-based inclusive line range."""

    score: float
    collection: str | None
    rel_path: str | None
    docid: str | None
    start_line: int
    end_line: int
    snippet: str


def _is_no_results(text: str) -> bool:
    lines = [line for line in text.splitlines() if line.strip()]
    return bool(lines) and all(_NO_RESULTS.match(line) for line in lines)


def _first_json_array(text: str) -> list[Any] | None:
    """The first ``[...]`` in ``text`` that parses as a JSON array of objects (or ``[]``)."""
    decoder = json.JSONDecoder()
    start = text.find("[")
    while start != -1:
        try:
            value, _ = decoder.raw_decode(text, start)
        except ValueError:
            value = None
        if isinstance(value, list) and all(isinstance(item, dict) for item in value):
            return value
        start = text.find("[", start + 1)
    return None


def split_snippet(snippet: str, fallback_line: int | None) -> tuple[int, int, str]:
    """``(start, end, text)`` from a qmd snippet.

    The header ``@@ -<start>,<count> @@ …`` gives lines ``start..start+count-1``; the header is
    removed, leading blank lines are dropped (moving ``start``), and trailing blank lines too
    when the snippet was not truncated. Without a header the range is ``fallback_line`` (qmd's
    best-matching line) or ``1..<number of lines>``.
    """
    match = _HEADER.match(snippet)
    if match is None:
        text = snippet.strip("\n")
        if fallback_line is not None and fallback_line >= 1:
            return fallback_line, fallback_line, text
        return 1, max(1, len(text.split("\n"))), text
    start, count = int(match.group(1)), int(match.group(2))
    start = max(1, start)
    end = start + max(1, count) - 1
    lines = snippet[match.end() :].split("\n")
    complete = len(lines) == count
    while len(lines) > 1 and not lines[0].strip() and start < end:
        lines.pop(0)
        start += 1
    if complete:
        while len(lines) > 1 and not lines[-1].strip() and end > start:
            lines.pop()
            end -= 1
    return start, end, "\n".join(lines).strip("\n")


def parse_uri(uri: str) -> tuple[str, str] | None:
    """``(collection, relative path)`` from ``qmd://<collection>/<path>[?index=…]``."""
    match = _URI.match(uri)
    if match is None:
        return None
    return unquote(match.group(1)), match.group(2)


def _as_int(value: Any) -> int | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return int(value) if math.isfinite(value) else None


def _to_hit(item: dict[str, Any]) -> QmdHit | None:
    raw_score = item.get("score", 0)
    if isinstance(raw_score, bool) or not isinstance(raw_score, (int, float)):
        return None
    score = float(raw_score) if math.isfinite(raw_score) else 0.0
    collection: str | None = None
    rel: str | None = None
    file = item.get("file")
    if isinstance(file, str) and (parsed := parse_uri(file)) is not None:
        collection, rel = parsed
    elif isinstance(item.get("collection"), str) and isinstance(file, str):
        collection, rel = item["collection"], file
    raw_docid = item.get("docid")
    docid_match = _DOCID.match(raw_docid) if isinstance(raw_docid, str) else None
    docid = docid_match.group(1) if docid_match else None
    if rel is None and docid is None:
        return None
    text = next((v for v in (item.get("snippet"), item.get("body")) if isinstance(v, str)), "")
    start_raw = _as_int(item.get("start_line", item.get("startLine")))
    end_raw = _as_int(item.get("end_line", item.get("endLine")))
    start, end, snippet = split_snippet(text, _as_int(item.get("line")))
    if start_raw is not None and start_raw >= 1:
        width = end - start
        start = start_raw
        end = end_raw if end_raw is not None and end_raw >= 1 else start_raw + width
    elif end_raw is not None and end_raw >= 1:
        start, end = max(1, end_raw - (end - start)), end_raw
    if end < start:
        start, end = end, start
    return QmdHit(
        score=score,
        collection=collection,
        rel_path=rel,
        docid=docid,
        start_line=start,
        end_line=end,
        snippet=snippet,
    )


def parse_search_output(stdout: str, stderr: str = "") -> list[QmdHit]:
    """Hits from ``qmd search|vsearch|query --json``.

    "No results found" lines (on stdout, or on stderr with an empty stdout) mean no hits.
    Otherwise stdout must hold a JSON array: the whole of it, or the first balanced array in
    it (native libraries print warnings before the JSON). Items that are not hits are skipped;
    an array of nothing but non-hits is an error.
    """
    if _is_no_results(stdout) or (not stdout.strip() and _is_no_results(stderr)):
        return []
    if not stdout.strip():
        raise QmdOutputError("qmd printed nothing (expected a JSON array)")
    try:
        parsed: Any = json.loads(stdout)
    except ValueError:
        parsed = None
    items = parsed if isinstance(parsed, list) else _first_json_array(stdout)
    if items is None:
        raise QmdOutputError(f"qmd output has no JSON array: {stdout.strip()[:200]!r}")
    hits = [hit for item in items if isinstance(item, dict) and (hit := _to_hit(item))]
    if items and not hits:
        raise QmdOutputError(f"qmd output has no usable hit: {stdout.strip()[:200]!r}")
    if len(hits) < len(items):
        log.debug("skipped %d malformed qmd hits", len(items) - len(hits))
    return hits


def parse_version(text: str) -> tuple[int, int, int] | None:
    """``(major, minor, patch)`` from ``qmd --version`` output."""
    match = _VERSION.search(text)
    if match is None:
        return None
    return int(match.group(1)), int(match.group(2)), int(match.group(3))


@dataclass(frozen=True)
class QmdStatusInfo:
    """What ``qmd status`` reports."""

    index_path: str | None = None
    total: int = 0
    vectors: int = 0
    pending: int = 0
    collection_files: dict[str, int] = field(default_factory=dict)
    models: dict[str, str] = field(default_factory=dict)


def _int(pattern: str, text: str) -> int:
    match = re.search(pattern, text, re.I | re.M)
    return int(match.group(1)) if match else 0


def parse_status(text: str) -> QmdStatusInfo:
    """Parse ``qmd status`` (text only; it has no JSON form)."""
    index = re.search(r"^Index:\s*(.+?)\s*$", text, re.M)
    collections: dict[str, int] = {}
    current: str | None = None
    models: dict[str, str] = {}
    section = ""
    for line in text.splitlines():
        if line and not line[0].isspace():
            section = line.strip()
            current = None
            continue
        stripped = line.strip()
        if section == "Collections":
            header = re.match(r"^(\S+) \(qmd://", stripped)
            files = re.match(r"^Files:\s*(\d+)", stripped)
            if header:
                current = header.group(1)
                collections[current] = 0
            elif files and current is not None:
                collections[current] = int(files.group(1))
        elif section == "Models":
            role = re.match(r"^(Embedding|Reranking|Generation):\s*(.+)$", stripped)
            if role:
                key = {"Embedding": "embed", "Reranking": "rerank", "Generation": "generate"}
                models[key[role.group(1)]] = role.group(2).strip()
    return QmdStatusInfo(
        index_path=index.group(1) if index else None,
        total=_int(r"^\s*Total:\s+(\d+) files? indexed", text),
        vectors=_int(r"^\s*Vectors:\s+(\d+)\b", text),
        pending=_int(r"^\s*Pending:\s+(\d+) need", text),
        collection_files=collections,
        models=models,
    )
