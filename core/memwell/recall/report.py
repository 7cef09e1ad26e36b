"""What the CLI prints about recall: the cache's status line and batch-search JSON lines."""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator

from memwell.contract.manager import MemorySearchManager
from memwell.contract.models import RecallCacheStatus
from memwell.contract.recall_protocols import search_many


def search_json_lines(
    manager: MemorySearchManager,
    lines: Iterable[str],
    *,
    max_results: int | None = None,
    min_score: float | None = None,
) -> Iterator[str]:
    """Answer one query per line (blank lines skipped) with one batch search; yield one JSON
    object ``{"query", "results"}`` per query, in order."""
    queries = [line.strip() for line in lines if line.strip()]
    answers = search_many(manager, queries, max_results=max_results, min_score=min_score)
    for query, results in zip(queries, answers, strict=True):
        record = {"query": query, "results": [r.model_dump() for r in results]}
        yield json.dumps(record, ensure_ascii=False)


def recall_cache_line(stats: RecallCacheStatus) -> str:
    """``on``/``off`` with the reason, the tiers' hits and misses and the bounds."""
    if not stats.enabled:
        return f"off ({stats.reason})"
    tiers = [f"exact {stats.exact.hits}/{stats.exact.misses}"]
    if stats.semantic is not None:
        tiers.append(f"semantic {stats.semantic.hits}/{stats.semantic.misses}")
    else:
        tiers.append(f"semantic off ({stats.semantic_off})")
    return (
        f"on; hits/misses {', '.join(tiers)}; backend searches {stats.backend_searches} "
        f"({stats.batch_shared} batch queries shared a near-duplicate's); "
        f"{stats.entries}/{stats.max_entries} entries, {stats.bytes}/{stats.max_bytes} bytes "
        "(counters are per process)"
    )
