"""The recall cache and batch search on the real builtin backend (SQLite, hash provider)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from memwell.contract.manager import MemorySearchManager
from memwell.recall.manager import RecallCachedManager
from memwell.testing import HashEmbeddingProvider

OpenFn = Callable[..., MemorySearchManager]


def _cache(memory: object) -> RecallCachedManager:
    assert isinstance(memory, RecallCachedManager)
    return memory


def test_open_memory_caches_exact_and_semantic_repeats(
    open_ws: OpenFn, workspace: Path, provider: HashEmbeddingProvider
) -> None:
    memory = _cache(open_ws(workspace))
    memory.sync()
    first = memory.search("Zanzibar codename billing", min_score=0.0)
    embedded = provider.embedded
    assert memory.search("Zanzibar codename billing", min_score=0.0) == first
    assert provider.embedded == embedded  # exact tier: nothing embedded, nothing searched
    assert memory.search("billing codename Zanzibar", min_score=0.0) == first
    assert provider.embedded == embedded + 1  # semantic tier: the query embedded, once
    memory.search("tomatoes watering morning", min_score=0.0)
    assert provider.embedded == embedded + 2  # a miss embeds once for both tier and backend
    stats = memory.status().recall_cache
    assert stats is not None and stats.semantic is not None
    assert (stats.exact.hits, stats.semantic.hits, stats.backend_searches) == (1, 1, 2)


def test_only_a_sync_that_changed_something_invalidates(open_ws: OpenFn, workspace: Path) -> None:
    memory = _cache(open_ws(workspace))
    memory.sync()
    memory.search("Zanzibar", min_score=0.0)
    memory.sync()  # nothing changed: entries stay valid
    memory.search("Zanzibar", min_score=0.0)
    assert memory.cache_status().exact.hits == 1
    (workspace / "memory" / "zanzibar.md").write_text("Zanzibar ships in March.\n")
    memory.sync()
    hits = memory.search("Zanzibar", min_score=0.0)
    assert any(h.path == "memory/zanzibar.md" for h in hits)
    assert memory.cache_status().invalidations == 1


def test_a_write_synced_by_another_manager_is_seen(open_ws: OpenFn, workspace: Path) -> None:
    memory = _cache(open_ws(workspace))
    memory.sync()
    assert not any(h.path == "memory/pelicans.md" for h in memory.search("pelicans"))
    writer = open_ws(workspace, sync={"watch_debounce_ms": 1})  # another manager, same index
    assert writer is not memory
    (workspace / "memory" / "pelicans.md").write_text("Pelicans nest by the lake.\n")
    writer.sync()
    assert any(h.path == "memory/pelicans.md" for h in memory.search("pelicans"))


def test_search_many_embeds_once_and_equals_single_searches(
    open_ws: OpenFn, workspace: Path, provider: HashEmbeddingProvider
) -> None:
    memory = _cache(open_ws(workspace, cache={"recall": {"enabled": False}}))
    memory.sync()
    queries = ["Zanzibar codename", "staging port", "dark mode editor", "", "autoscaler nodes"]
    calls = provider.calls
    batch = memory.search_many(queries, min_score=0.0)
    assert provider.calls == calls + 1  # one embedding request for every query
    singles = [memory.search(q, min_score=0.0) for q in queries]
    assert batch == singles
    assert batch[0][0].path == "memory/2026-01-02.md" and batch[3] == []
    sessions_only = memory.search_many(queries, sources=["sessions"])
    assert sessions_only == [[] for _ in queries]


def test_search_many_keyword_only_equals_single_searches(open_ws: OpenFn, workspace: Path) -> None:
    memory = _cache(open_ws(workspace, provider="none"))
    memory.sync()
    queries = ["Zanzibar codename", "staging port", "autoscaler nodes"]
    assert memory.search_many(queries) == [memory.search(q) for q in queries]
    stats = memory.status().recall_cache
    assert stats is not None and stats.semantic is None and stats.semantic_off is not None


def test_warm_loads_the_index_and_the_model(
    open_ws: OpenFn, workspace: Path, provider: HashEmbeddingProvider
) -> None:
    memory = _cache(open_ws(workspace))
    memory.sync()
    memory.inner.vectors.invalidate()  # type: ignore[attr-defined]
    calls = provider.calls
    memory.search("port", session_key="agent:main:1")  # a new session warms up first
    assert memory.warmed_ms is not None and provider.calls == calls + 2  # warm-up + query
    memory.search("editor", session_key="agent:main:1")
    assert provider.calls == calls + 3  # the same session does not warm again


def test_a_batch_of_near_duplicates_searches_once_per_group_with_the_same_answers(
    open_ws: OpenFn, workspace: Path
) -> None:
    queries = [
        "Zanzibar codename billing",
        "zanzibar codename billing?",
        "billing codename Zanzibar",
        "tomatoes watering morning",
        "Zanzibar codename billing",
    ]
    memory = _cache(open_ws(workspace))
    memory.sync()
    batch = memory.search_many(queries, min_score=0.0)
    stats = memory.cache_status()
    assert (stats.backend_searches, stats.batch_shared) == (2, 3)
    other = _cache(open_ws(workspace, cache={"recall": {"exact_ttl_seconds": 60.0}}))
    assert other is not memory
    assert [other.search(q, min_score=0.0) for q in queries] == batch
    assert other.cache_status().backend_searches == 2
