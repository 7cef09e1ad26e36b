"""The recall cache's tiers, keys, TTLs and bounds, on a fake backend (real backends:
tests/builtin/test_recall_cache_builtin.py)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pytest
from memwell.contract.config import MemwellSettings
from memwell.contract.embeddings import Matrix, Vector
from memwell.contract.models import MemorySearchResult, MemoryStatus, ProbeResult, ReadFileResult
from memwell.recall.manager import NO_EMBEDDER, NO_VERSION, RecallCachedManager
from memwell.recall.store import estimate_bytes, normalise_query
from memwell.testing import HashEmbeddingProvider


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


class Embedder:
    """Query embedder over the hash provider, counting embeddings."""

    def __init__(self) -> None:
        self.provider = HashEmbeddingProvider()
        self.embedded: list[str] = []

    @property
    def space(self) -> str:
        return "hash-64"

    def embed(self, text: str) -> Vector:
        self.embedded.append(text)
        vector = self.provider.embed_query(text)
        unit: Vector = (vector / np.linalg.norm(vector)).astype(np.float32)
        return unit

    def embed_many(self, texts: Sequence[str]) -> Matrix:
        return np.vstack([self.embed(t) for t in texts])


class Backend:
    """A backend answering every query with one hit naming the query and the version."""

    def __init__(self, *, versioned: bool = True, embedder: Embedder | None = None) -> None:
        self.version = 1
        self.versioned = versioned
        self.embedder = embedder
        self.calls: list[str] = []
        self.batches: list[list[str]] = []
        self.closed = False
        self.snippet_chars = 50

    def content_version(self) -> str | None:
        return f"v{self.version}" if self.versioned else None

    def query_embedder(self) -> Embedder | None:
        return self.embedder

    def search(
        self,
        query: str,
        *,
        max_results: int | None = None,
        min_score: float | None = None,
        session_key: str | None = None,
        sources: Sequence[str] | None = None,
    ) -> list[MemorySearchResult]:
        self.calls.append(query)
        snippet = f"{query} @v{self.version} ".ljust(self.snippet_chars, "x")
        return [
            MemorySearchResult(
                path="MEMORY.md", start_line=1, end_line=1, score=0.9, snippet=snippet
            )
        ]

    def search_many(
        self, queries: Sequence[str], **kwargs: object
    ) -> list[list[MemorySearchResult]]:
        self.batches.append(list(queries))
        return [self.search(q, **kwargs) for q in queries]  # type: ignore[arg-type]

    def read_file(
        self, rel_path: str, *, from_line: int | None = None, lines: int | None = None
    ) -> ReadFileResult:
        return ReadFileResult(path=rel_path, text="")

    def status(self) -> MemoryStatus:
        return MemoryStatus(backend="fake", provider="hash", workspace_dir="/tmp")

    def sync(self, *, reason: str = "manual", force: bool = False, progress: object = None) -> None:
        self.version += 1

    def probe_embedding(self) -> ProbeResult:
        return ProbeResult(ok=True)

    def probe_vector(self) -> ProbeResult:
        return ProbeResult(ok=True)

    def close(self) -> None:
        self.closed = True


def cached(backend: Backend, clock: Clock, **recall: object) -> RecallCachedManager:
    settings = MemwellSettings.model_validate({"cache": {"recall": recall}})
    return RecallCachedManager(backend, settings, clock=clock)  # type: ignore[arg-type]


@pytest.fixture
def clock() -> Clock:
    return Clock()


def test_exact_tier_hit_and_miss(clock: Clock) -> None:
    backend = Backend()
    memory = cached(backend, clock, semantic=False)
    first = memory.search("deploy  checklist ")
    again = memory.search(" deploy checklist")  # same after normalising whitespace
    assert again == first and backend.calls == ["deploy  checklist"]  # stripped, as cut
    memory.search("deploy checklist", max_results=3)  # other options: a miss
    memory.search("Deploy checklist")  # case is kept: a miss
    assert len(backend.calls) == 3
    stats = memory.status().recall_cache
    assert stats is not None and stats.enabled
    assert (stats.exact.hits, stats.exact.misses, stats.backend_searches) == (1, 3, 3)
    assert stats.semantic is None and stats.semantic_off == "cache.recall.semantic is false"


def test_semantic_tier_hit_and_miss_embeds_each_query_once(clock: Clock) -> None:
    embedder = Embedder()
    backend = Backend(embedder=embedder)
    memory = cached(backend, clock)
    memory.search("what is the staging database port")
    # same words in another order: cosine 1 with the cached query, not an exact match
    hit = memory.search("the staging database port is what")
    assert backend.calls == ["what is the staging database port"]
    assert hit[0].snippet.startswith("what is the staging database port @v1")
    memory.search("tomatoes need watering every morning")  # unrelated: a miss
    assert len(backend.calls) == 2
    stats = memory.status().recall_cache
    assert stats is not None and stats.semantic is not None
    assert (stats.semantic.hits, stats.semantic.misses) == (1, 2)
    assert embedder.embedded == [
        "what is the staging database port",
        "the staging database port is what",
        "tomatoes need watering every morning",
    ]


def test_semantic_threshold_is_respected(clock: Clock) -> None:
    probe = Embedder()
    similarity = float(
        probe.embed("staging database port") @ probe.embed("staging database port number")
    )
    assert 0.5 < similarity < 0.99
    for threshold, backend_calls in ((similarity + 0.01, 2), (similarity - 0.01, 1)):
        backend = Backend(embedder=Embedder())
        memory = cached(backend, clock, semantic_threshold=threshold)
        memory.search("staging database port")
        memory.search("staging database port number")
        assert len(backend.calls) == backend_calls


def test_sync_that_changes_the_version_invalidates(clock: Clock) -> None:
    backend = Backend(embedder=Embedder())
    memory = cached(backend, clock)
    assert memory.search("port")[0].snippet.startswith("port @v1")
    memory.sync()
    assert memory.search("port")[0].snippet.startswith("port @v2")
    assert backend.calls == ["port", "port"]
    stats = memory.cache_status()
    assert stats.invalidations == 1 and stats.entries == 1


def test_version_change_outside_the_wrapper_invalidates(clock: Clock) -> None:
    backend = Backend()
    memory = cached(backend, clock)
    memory.search("port")
    backend.version = 7  # e.g. another process synced
    assert memory.search("port")[0].snippet.startswith("port @v7")


def test_ttl_expiry_per_tier(clock: Clock) -> None:
    backend = Backend(embedder=Embedder())
    memory = cached(backend, clock, exact_ttl_seconds=3600, semantic_ttl_seconds=86_400)
    memory.search("staging database port")
    clock.now += 3599
    memory.search("staging database port")
    assert len(backend.calls) == 1  # exact hit just inside the hour
    clock.now += 2
    memory.search("staging database port")
    assert len(backend.calls) == 1  # exact expired; the semantic tier (24 h) still has it
    stats = memory.cache_status()
    assert stats.semantic is not None and stats.semantic.hits == 1
    clock.now += 86_400
    memory.search("staging database port")
    assert len(backend.calls) == 2  # both expired


def test_semantic_lookups_reuse_the_stacked_vectors_until_an_entry_changes(
    clock: Clock,
) -> None:
    """Hits compare against one stack of the cached vectors; each put, eviction or expiry is
    seen by the next lookup, never a stale stack."""
    memory = cached(Backend(embedder=Embedder()), clock, semantic_ttl_seconds=100, max_entries=2)
    memory.search("staging database port")
    memory.search("port database staging")  # cosine 1 with the first: a hit
    stack = memory.store._stacks[False]
    memory.search("database staging port")  # another hit: the same stack, not rebuilt
    assert memory.store._stacks[False] is stack and memory.store.semantic_stats.hits == 2
    memory.search("tomatoes need watering")  # a miss, put: evicts the least recently used
    assert memory.search("need watering tomatoes")[0].snippet.startswith("tomatoes need")
    assert memory.store._stacks[False] is not stack
    clock.now += 101  # every vector expired: the same stack, masked by the clock
    hits = memory.store.semantic_stats.hits
    memory.search("watering tomatoes need")
    assert memory.store.semantic_stats.hits == hits


def test_without_content_version_nothing_is_cached(clock: Clock) -> None:
    backend = Backend(versioned=False)
    memory = cached(backend, clock)
    memory.search("port")
    memory.search("port")
    assert len(backend.calls) == 2
    stats = memory.status().recall_cache
    assert stats is not None and not stats.enabled and stats.reason == NO_VERSION


def test_without_query_embedder_the_semantic_tier_is_off(clock: Clock) -> None:
    memory = cached(Backend(), clock)
    memory.search("port")
    stats = memory.status().recall_cache
    assert stats is not None and stats.enabled and stats.semantic is None
    assert stats.semantic_off == NO_EMBEDDER


def test_disabled_by_settings(clock: Clock) -> None:
    backend = Backend()
    memory = cached(backend, clock, enabled=False)
    memory.search("port")
    memory.search("port")
    assert len(backend.calls) == 2
    stats = memory.status().recall_cache
    assert stats is not None and stats.reason == "cache.recall.enabled is false"


def test_entry_bound_evicts_least_recently_used(clock: Clock) -> None:
    backend = Backend()
    memory = cached(backend, clock, max_entries=2)
    memory.search("a")
    memory.search("b")
    memory.search("a")  # a is now the most recent
    memory.search("c")  # evicts b
    backend.calls.clear()
    memory.search("a")
    memory.search("c")
    memory.search("b")
    assert backend.calls == ["b"]
    assert memory.cache_status().evictions >= 1


def test_byte_bound(clock: Clock) -> None:
    backend = Backend()
    backend.snippet_chars = 1000
    one = estimate_bytes("q0", None, backend.search("q0"))
    backend.calls.clear()
    memory = cached(backend, clock, max_bytes=max(1024, one * 3 + 10))
    for i in range(10):
        memory.search(f"q{i}")
    stats = memory.cache_status()
    assert stats.entries == 3 and stats.bytes <= stats.max_bytes
    assert stats.evictions == 7


def test_search_many_batches_the_misses(clock: Clock) -> None:
    backend = Backend()
    memory = cached(backend, clock)
    memory.search("a")  # one query is a batch of one: no bounce through the backend's search
    answers = memory.search_many(["a", "b", "", "c"])
    assert backend.batches == [["a"], ["b", "c"]]
    assert [a[0].snippet.split()[0] if a else None for a in answers] == ["a", "b", None, "c"]


def test_attributes_and_close_pass_through(clock: Clock) -> None:
    backend = Backend()
    memory = cached(backend, clock)
    assert memory.snippet_chars == 50 and memory.inner is backend
    memory.close()
    assert backend.closed and memory.closed


def test_normalise_query() -> None:
    assert normalise_query("  ｄeploy\t\nchecklist ") == "deploy checklist"


def _similarity(a: str, b: str) -> float:
    probe = Embedder()
    return float(probe.embed(a) @ probe.embed(b))


RECENT_A = "what did we decide yesterday about the deploy"
RECENT_B = "what did we decide yesterday about the deploy freeze and the rollback window"


def test_temporal_tier_answers_recent_events_questions_at_0_7_for_7_days(clock: Clock) -> None:
    similarity = _similarity(RECENT_A, RECENT_B)
    assert 0.7 <= similarity < 0.85  # below the semantic tier, above the temporal one
    backend = Backend(embedder=Embedder())
    memory = cached(backend, clock, temporal=True)
    memory.search(RECENT_A)
    clock.now += 6 * 86_400  # past the semantic TTL, inside the temporal one
    hit = memory.search(RECENT_B)
    assert backend.calls == [RECENT_A] and hit[0].snippet.startswith(RECENT_A)
    stats = memory.cache_status()
    # the first search asked the tier too (and missed): nothing was cached yet
    assert stats.temporal is not None and (stats.temporal.hits, stats.temporal.misses) == (1, 1)
    clock.now += 2 * 86_400  # 8 days: expired
    memory.search(RECENT_B + " again")
    assert len(backend.calls) == 2


def test_temporal_tier_ignores_questions_not_about_recent_events(clock: Clock) -> None:
    older = RECENT_A.replace("yesterday", "in March")
    later = RECENT_B.replace("yesterday", "in March")
    assert 0.7 <= _similarity(older, later) < 0.85
    backend = Backend(embedder=Embedder())
    memory = cached(backend, clock, temporal=True)
    memory.search(older)
    memory.search(later)  # not about recent events: the temporal tier is not asked
    assert 0.7 <= _similarity(RECENT_A, older) < 0.85
    memory.search(RECENT_A)  # asks, but no cached question was about recent events
    assert len(backend.calls) == 3
    stats = memory.cache_status()
    assert stats.temporal is not None and (stats.temporal.hits, stats.temporal.misses) == (0, 1)


def test_temporal_tier_is_off_by_default(clock: Clock) -> None:
    backend = Backend(embedder=Embedder())
    memory = cached(backend, clock)
    memory.search(RECENT_A)
    memory.search(RECENT_B)
    assert len(backend.calls) == 2 and memory.cache_status().temporal is None
