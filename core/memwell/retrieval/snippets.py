"""Snippets and citations: turn ranked candidates into :class:`MemorySearchResult` objects."""

from __future__ import annotations

from collections.abc import Sequence

from memwell.contract.errors import InvalidArgumentError
from memwell.contract.models import MemorySearchResult
from memwell.retrieval.candidate import Candidate
from memwell.retrieval.hybrid import clamp01

DEFAULT_SNIPPET_LIMIT = 700
_UTF16 = "utf-16-le"
_CODE_UNIT_BYTES = 2
_HIGH_SURROGATES = range(0xD800, 0xDC00)
_NON_DIRECT_CHAT_SEGMENTS = frozenset({"channel", "group"})


def truncate_snippet(text: str, limit: int = DEFAULT_SNIPPET_LIMIT) -> str:
    """Cut ``text`` to at most ``limit`` UTF-16 code units without splitting a surrogate pair."""
    if len(text) * _CODE_UNIT_BYTES <= limit:  # a character is at most two code units
        return text
    units = text.encode(_UTF16, "surrogatepass")
    max_bytes = max(0, limit) * _CODE_UNIT_BYTES
    if len(units) <= max_bytes:
        return text
    cut = units[:max_bytes]
    if cut and int.from_bytes(cut[-_CODE_UNIT_BYTES:], "little") in _HIGH_SURROGATES:
        cut = cut[:-_CODE_UNIT_BYTES]
    return cut.decode(_UTF16, "surrogatepass")


def bare_snippet(result: MemorySearchResult) -> str:
    """``result.snippet`` without the ``Source: path#L…`` line that citations add to it."""
    suffix = f"\n\nSource: {result.citation}"
    if result.citation and result.snippet.endswith(suffix):
        return result.snippet[: -len(suffix)]
    return result.snippet


def format_citation(path: str, start_line: int, end_line: int) -> str:
    """``path#L5`` for a single line, ``path#L5-L9`` for a range."""
    if start_line == end_line:
        return f"{path}#L{start_line}"
    return f"{path}#L{start_line}-L{end_line}"


def _is_direct_chat(session_key: str | None) -> bool:
    """True unless the key (after an ``agent:<id>:`` prefix) has a channel or group segment."""
    parts = [part for part in (session_key or "").strip().lower().split(":") if part]
    if len(parts) >= 3 and parts[0] == "agent":
        parts = parts[2:]
    return _NON_DIRECT_CHAT_SEGMENTS.isdisjoint(parts)


def citations_enabled(mode: str, session_key: str | None) -> bool:
    """Whether results carry citations: ``on`` always, ``off`` never, ``auto`` in direct chats."""
    if mode == "on":
        return True
    if mode == "off":
        return False
    if mode == "auto":
        return _is_direct_chat(session_key)
    raise InvalidArgumentError(f"unknown citations mode {mode!r}; expected 'on', 'off' or 'auto'")


def _to_result(item: Candidate, citations: bool, snippet_chars: int) -> MemorySearchResult:
    snippet = truncate_snippet(item.text, snippet_chars)
    citation = None
    if citations:
        citation = format_citation(item.path, item.start_line, item.end_line)
        snippet = f"{snippet.strip()}\n\nSource: {citation}"
    return MemorySearchResult(
        path=item.path,
        start_line=item.start_line,
        end_line=item.end_line,
        score=clamp01(item.score),
        snippet=snippet,
        source=item.source,
        citation=citation,
    )


def to_results(
    items: Sequence[Candidate],
    *,
    citations: bool,
    snippet_chars: int = DEFAULT_SNIPPET_LIMIT,
) -> list[MemorySearchResult]:
    """Build results with snippets of ``snippet_chars`` UTF-16 units (700 by default), scores
    clamped to [0, 1] and optional citations.

    With ``citations`` the snippet becomes ``snippet.strip() + "\\n\\nSource: " + citation``
    and ``citation`` is set; otherwise ``citation`` is None.
    """
    return [_to_result(item, citations, snippet_chars) for item in items]
