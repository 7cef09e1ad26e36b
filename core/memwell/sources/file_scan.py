"""File-scan mode: keyword search straight over the Markdown files, the last fallback rung.

When a backend has no usable keyword index (SQLite without FTS5, a damaged FTS table, no
index at all), :func:`scan_memory_files` reads the memory files, chunks them like the
indexer, and scores every chunk with BM25 over the query's FTS terms (the same terms,
stop-word rules and CJK n-grams as :func:`~memwell.retrieval.fts_query.build_fts_query`),
mapped to a score like an FTS5 rank. The caller ranks the candidates like any keyword-only
hit (:func:`~memwell.retrieval.pipeline.rank_keyword_only`). A scan is bounded in time and in
bytes read; what it skipped is reported in :attr:`ScanOutcome.incomplete`.
"""

from __future__ import annotations

import math
import time
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path

import msgspec

from memwell.retrieval.candidate import Candidate
from memwell.retrieval.chunking import chunk_markdown
from memwell.retrieval.cjk import segment_for_index
from memwell.retrieval.fts_query import bm25_rank_to_score, build_fts_query
from memwell.retrieval.keywords import tokenize
from memwell.sources.discovery import list_memory_files, read_source_file

#: FTS5's BM25 constants.
K1 = 1.2
B = 0.75


class ScanLimits(msgspec.Struct, frozen=True):
    """Bounds of one scan: wall time, total bytes read, and the largest file read."""

    max_seconds: float = 2.0
    max_total_bytes: int = 32 * 1024 * 1024
    max_file_bytes: int = 4 * 1024 * 1024


class ScanOutcome(msgspec.Struct):
    """Candidates found (best first, at most ``limit``), files read, and what was left out."""

    candidates: list[Candidate]
    files_scanned: int
    incomplete: list[str] = msgspec.field(default_factory=list)


class _Scored(msgspec.Struct, frozen=True):
    path: str
    start_line: int
    end_line: int
    text: str
    terms: Counter[str]


def _chunks(
    workspace: Path,
    extra_paths: Sequence[str],
    tokens: int,
    overlap: int,
    limits: ScanLimits,
    clock: Callable[[], float],
    incomplete: list[str],
) -> tuple[list[_Scored], int]:
    started = clock()
    total = 0
    scanned = 0
    out: list[_Scored] = []
    for abs_path in list_memory_files(workspace, extra_paths):
        if clock() - started > limits.max_seconds:
            incomplete.append(f"time limit of {limits.max_seconds:g} s reached")
            break
        try:
            size = abs_path.stat().st_size
        except OSError:
            continue
        if size > limits.max_file_bytes:
            incomplete.append(f"{abs_path.name} skipped ({size} bytes > {limits.max_file_bytes})")
            continue
        if total + size > limits.max_total_bytes:
            incomplete.append(f"byte limit of {limits.max_total_bytes} reached")
            break
        read = read_source_file(abs_path, workspace)
        if read is None:
            continue
        entry, text = read
        total += entry.size
        scanned += 1
        for chunk in chunk_markdown(text, tokens=tokens, overlap=overlap):
            terms = Counter(tokenize(segment_for_index(chunk.text)))
            out.append(_Scored(entry.path, chunk.start_line, chunk.end_line, chunk.text, terms))
    return out, scanned


def scan_memory_files(
    workspace: Path,
    query: str,
    *,
    limit: int,
    extra_paths: Sequence[str] = (),
    tokens: int = 400,
    overlap: int = 80,
    limits: ScanLimits | None = None,
    clock: Callable[[], float] = time.monotonic,
) -> ScanOutcome:
    """The ``limit`` best chunks of the memory files for ``query`` by BM25 (``text_score``).

    A chunk matches when it holds at least one query term (an OR query, like the keyword
    index). ``score`` is left for the caller's keyword-only ranking.
    """
    bounds = limits or ScanLimits()
    fts = build_fts_query(query)
    incomplete: list[str] = []
    if fts is None:
        return ScanOutcome([], 0, incomplete)
    chunks, scanned = _chunks(
        workspace, extra_paths, tokens, min(overlap, tokens - 1), bounds, clock, incomplete
    )
    if not chunks:
        return ScanOutcome([], scanned, incomplete)
    terms = set(fts.terms)
    frequency = Counter(t for c in chunks for t in terms if t in c.terms)
    average = sum(c.terms.total() for c in chunks) / len(chunks) or 1.0
    count = len(chunks)
    scored: list[tuple[float, _Scored]] = []
    for chunk in chunks:
        length = chunk.terms.total()
        bm25 = 0.0
        for term in terms:
            tf = chunk.terms.get(term, 0)
            if not tf:
                continue
            df = frequency[term]
            idf = max(1e-6, math.log((count - df + 0.5) / (df + 0.5)))
            bm25 += idf * tf * (K1 + 1) / (tf + K1 * (1 - B + B * length / average))
        if bm25 > 0:
            scored.append((bm25, chunk))
    scored.sort(key=lambda pair: (-pair[0], pair[1].path, pair[1].start_line))
    candidates = [
        Candidate(
            id=f"scan:{c.path}:{c.start_line}-{c.end_line}",
            path=c.path,
            start_line=c.start_line,
            end_line=c.end_line,
            text=c.text,
            text_score=bm25_rank_to_score(-bm25),
        )
        for bm25, c in scored[:limit]
    ]
    return ScanOutcome(candidates, scanned, incomplete)
