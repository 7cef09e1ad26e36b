"""The rerank stage: RerankingManager's ordering, floor and failure, and the plugin hook."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from types import SimpleNamespace

import memwell_sqlite.plugin
import pytest
from memwell.contract.config import MemwellSettings
from memwell.contract.descriptors import RerankerSpec
from memwell.contract.errors import ConfigError
from memwell.contract.hookspecs import hookimpl
from memwell.contract.models import MemorySearchResult
from memwell.contract.recall_protocols import search_many
from memwell.registry.plugins import PluginRegistry
from memwell.runtime.factory import close_all, open_memory
from memwell.runtime.fallback import unwrap
from memwell.runtime.rerank import RerankingManager
from memwell.testing import hash_provider_plugin
from memwell.testing.conformance import write_workspace


class WordOverlap:
    """Scores the share of the query's words a document holds (our own fake)."""

    id = "overlap"
    model = "overlap-1"

    def __init__(self) -> None:
        self.calls: list[tuple[str, list[str]]] = []
        self.fail = False

    def rerank(self, query: str, documents: Sequence[str]) -> list[float]:
        self.calls.append((query, list(documents)))
        if self.fail:
            raise RuntimeError("service down")
        words = set(query.lower().split())
        return [len(words & set(d.lower().split())) / len(words) for d in documents]


class FixedManager:
    """Returns the same hits for any query, recording the options it was asked with."""

    def __init__(self, hits: list[MemorySearchResult]) -> None:
        self.hits = hits
        self.asked: dict[str, object] = {}

    def search(self, query: str, **options: object) -> list[MemorySearchResult]:
        self.asked = options
        return list(self.hits)

    def search_many(
        self, queries: Sequence[str], **options: object
    ) -> list[list[MemorySearchResult]]:
        return [self.search(query, **options) for query in queries]


def hit(path: str, score: float, snippet: str) -> MemorySearchResult:
    return MemorySearchResult(
        path=path, start_line=1, end_line=1, score=score, snippet=snippet, source="memory"
    )


HITS = [
    hit("a.md", 0.9, "cats sleep all day"),
    hit("b.md", 0.6, "the release ships on friday"),
    hit("c.md", 0.5, "release notes"),
]


def reranking(reranker: WordOverlap, **rerank: object) -> tuple[RerankingManager, FixedManager]:
    inner = FixedManager(HITS)
    settings = MemwellSettings.model_validate({"rerank": {"provider": "overlap", **rerank}})
    return RerankingManager(inner, reranker, settings), inner  # type: ignore[arg-type]


def test_hits_come_back_in_the_rerankers_order_with_its_scores() -> None:
    manager, inner = reranking(WordOverlap(), candidates=30)
    found = manager.search("when does the release ship", max_results=2, min_score=0.0)
    assert [h.path for h in found] == ["b.md", "c.md"]
    assert found[0].score == pytest.approx(0.4)
    assert inner.asked["max_results"] == 30 and inner.asked["min_score"] == 0.0


def test_a_batch_is_reranked_like_single_searches() -> None:
    manager, _ = reranking(WordOverlap())
    queries = ["when does the release ship", "cats sleep"]
    batch = search_many(manager, queries, max_results=2, min_score=0.0)  # type: ignore[arg-type]
    assert batch == [manager.search(q, max_results=2, min_score=0.0) for q in queries]
    assert [h.path for h in batch[0]] == ["b.md", "c.md"]  # the reranker's order and scores
    assert [h.score for h in batch[1]][:1] == [1.0]  # the backend said 0.9


def test_the_floor_applies_to_the_rerankers_scores() -> None:
    manager, _ = reranking(WordOverlap())
    assert [h.path for h in manager.search("release friday", min_score=0.75)] == ["b.md"]
    assert manager.search("dogs", min_score=0.1) == []


def test_a_failing_reranker_serves_the_backend_ranking_and_says_why(
    caplog: pytest.LogCaptureFixture,
) -> None:
    reranker = WordOverlap()
    reranker.fail = True
    manager, _ = reranking(reranker)
    found = manager.search("release", min_score=0.55)
    assert [h.path for h in found] == ["a.md", "b.md"]
    assert manager.last_error == "reranker overlap failed: service down"
    assert "serving the backend's ranking" in caplog.text


def overlap_plugin(reranker: WordOverlap) -> object:
    @hookimpl
    def memwell_rerankers() -> list[RerankerSpec]:
        return [
            RerankerSpec(
                id="overlap", create=lambda ctx: reranker, default_model="o", transport="local"
            )
        ]

    return SimpleNamespace(memwell_rerankers=memwell_rerankers)


def test_open_memory_puts_the_configured_reranker_in_front_of_the_backend(
    tmp_path: Path,
) -> None:
    reranker = WordOverlap()
    registry = PluginRegistry(load_entry_points=False)
    registry.register(memwell_sqlite.plugin, "builtin")
    registry.register(hash_provider_plugin(), "hash")
    registry.register(overlap_plugin(reranker), "overlap")
    assert list(registry.rerankers) == ["overlap"]
    assert registry.infos["overlap"].rerankers == ["overlap"]
    workspace = write_workspace(tmp_path / "ws")
    base = {"provider": "hash", "sync": {"watch": False, "on_search": False}}
    try:
        plain = open_memory(
            workspace, settings=MemwellSettings.model_validate(base), registry=registry
        )
        plain.sync()
        plain.search("Zanzibar codename billing", min_score=0.0)
        assert reranker.calls == [], "off by default"
        settings = MemwellSettings.model_validate({**base, "rerank": {"provider": "overlap"}})
        memory = open_memory(workspace, settings=settings, registry=registry)
        found = memory.search("zanzibar codename billing", min_score=0.5)
        assert [h.path for h in found] == ["memory/2026-01-02.md"]
        assert reranker.calls and reranker.calls[0][0] == "zanzibar codename billing"
        assert not isinstance(unwrap(memory), RerankingManager)
        unknown = MemwellSettings.model_validate({**base, "rerank": {"provider": "nope"}})
        with pytest.raises(ConfigError, match=r"unknown reranker 'nope'.*overlap"):
            open_memory(workspace, settings=unknown, registry=registry)
    finally:
        close_all()


def test_a_weight_blends_the_rerankers_score_with_the_backends_and_keeps_its_floor() -> None:
    manager, inner = reranking(WordOverlap(), weight=0.5)
    found = manager.search("when does the release ship", max_results=3, min_score=0.3)
    # a: 0.5 x 0 + 0.5 x 0.9; b: 0.5 x 0.4 + 0.5 x 0.6; c: 0.5 x 0.2 + 0.5 x 0.5
    assert [(h.path, round(h.score, 3)) for h in found] == [
        ("b.md", 0.5),
        ("a.md", 0.45),
        ("c.md", 0.35),
    ]
    assert inner.asked["min_score"] == 0.3, "the backend's floor picks the candidates"
