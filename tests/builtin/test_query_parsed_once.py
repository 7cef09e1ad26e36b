"""One search, through every layer ``open_memory`` stacks, cuts its query once, parses it once
per kind, and reaches the backend as one batch with the one options record its caller's
arguments made (issue 44 item 3)."""

from __future__ import annotations

import importlib
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import memwell_jsonfile.plugin
import msgspec
import pytest
from conftest import OpenFn
from memwell.contract.descriptors import RerankerSpec
from memwell.contract.hookspecs import hookimpl
from memwell.contract.manager import DelegatingManager
from memwell.contract.search_options import SearchOptions
from memwell.registry.plugins import PluginRegistry
from memwell.retrieval import parsed_query
from memwell.retrieval.parsed_query import ParsedQuery
from memwell.runtime.fallback import FallbackMemoryManager, unwrap
from memwell.testing.conformance import write_workspace

QUERY = "When did Ines Duarte +deploy the staging checklist -friday in May 2024?"

FILES = {
    "memory/2024-05-03.md": "# Deploy\n\nInes Duarte will deploy the staging checklist today.\n",
    "memory/procedures/deploy.md": "# Checklist\n\nRun the staging deploy; never on friday.\n",
    "memory/garden.md": "# Garden\n\nTomatoes need watering twice a week in July.\n",
}

# Where each query parser is looked up when a search runs (module, name). The recall cache's
# ``asks_recent`` of its exact-tier key reads that key (the normalised text), not the query.
PARSERS = [
    ("memwell.recall.manager", "parse_boolean"),
    ("memwell.retrieval.boolean", "parse_boolean"),
    ("memwell.retrieval.date_match", "query_dates"),
    ("memwell.retrieval.date_match", "asks_when"),
    ("memwell.retrieval.superseded", "asks_about_history"),
    ("memwell.retrieval.superseded", "query_terms"),
    ("memwell.retrieval.pipeline", "query_terms"),
    ("memwell.retrieval.cjk", "_units"),
    ("memwell.retrieval.routing", "route_query"),
    ("memwell_sqlite.search", "build_fts_query"),
]


class Spies:
    """Every parser call given the query's text, every parse computed, every cut."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.calls: list[tuple[str, str]] = []
        self.computed: list[tuple[int, Any]] = []
        self.objects: set[int] = set()
        self.cuts = 0
        for module_name, name in PARSERS:
            module = importlib.import_module(module_name)
            monkeypatch.setattr(module, name, self._spy(name, getattr(module, name)))
        real_parse = ParsedQuery.parse
        real_bound = parsed_query.bound_query

        def parse(query: ParsedQuery, key: tuple[Any, ...], compute: Callable[[], Any]) -> Any:
            def counted() -> Any:
                self.computed.append((id(query), key))
                return compute()

            return real_parse(query, key, counted)

        def bound(query: str, max_chars: int) -> str:
            self.cuts += 1
            return real_bound(query, max_chars)

        monkeypatch.setattr(ParsedQuery, "parse", parse)
        monkeypatch.setattr(parsed_query, "bound_query", bound)

    def _spy(self, name: str, parser: Callable[..., Any]) -> Callable[..., Any]:
        def spy(query: str, *args: Any, **kwargs: Any) -> Any:
            if query == QUERY:
                self.calls.append((name, type(query).__name__))
                self.objects.add(id(query))
            return parser(query, *args, **kwargs)

        return spy


@pytest.mark.parametrize("provider_id", ["hash", "none"])
def test_a_search_cuts_its_query_once_and_parses_it_once_per_kind(
    open_ws: OpenFn, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, provider_id: str
) -> None:
    memory = open_ws(write_workspace(tmp_path / "ws", FILES), provider=provider_id)
    memory.sync()
    spies = Spies(monkeypatch)
    results = memory.search(QUERY, min_score=0.0)

    assert results, "the search ran the whole pipeline"
    assert spies.cuts == 1
    called = {name for name, _ in spies.calls}
    assert {"parse_boolean", "route_query", "query_dates", "build_fts_query"} <= called
    # every parser was given the one ParsedQuery the recall cache made, never a plain copy
    assert {kind for _, kind in spies.calls} == {"ParsedQuery"}
    assert len(spies.objects) == 1
    computed = Counter(key for _, key in spies.computed)
    assert computed and max(computed.values()) == 1, computed
    assert {obj for obj, _ in spies.computed} == spies.objects


def test_a_batch_cuts_each_query_once(
    open_ws: OpenFn, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    memory: Any = open_ws(write_workspace(tmp_path / "ws", FILES))
    memory.sync()
    spies = Spies(monkeypatch)
    memory.search_many([QUERY, "tomatoes watering", "  "], min_score=0.0)
    assert spies.cuts == 3


def test_one_search_reaches_the_backend_as_one_batch(
    open_ws: OpenFn, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No bounce: the backend's ``search_batch`` runs once, its ``search`` never."""
    memory = open_ws(write_workspace(tmp_path / "ws", FILES))
    memory.sync()
    backend: Any = unwrap(memory)
    seen: list[str] = []
    for name in ("search", "search_many", "search_batch", "_search_many"):
        real = getattr(backend, name)

        def spy(*args: Any, _name: str = name, _real: Any = real, **kwargs: Any) -> Any:
            seen.append(_name)
            return _real(*args, **kwargs)

        monkeypatch.setattr(backend, name, spy)
    assert memory.search("staging checklist", min_score=0.0)
    assert seen == ["search_batch", "_search_many"]


class WordOverlap:
    """A reranker: the share of the query's words a document holds (our own fake)."""

    id = "overlap"
    model = "overlap-1"

    def __init__(self) -> None:
        self.queries: list[str] = []

    def rerank(self, query: str, documents: Sequence[str]) -> list[float]:
        self.queries.append(query)
        words = set(query.lower().split())
        return [len(words & set(d.lower().split())) / len(words) for d in documents]


def overlap_plugin(reranker: WordOverlap) -> object:
    @hookimpl
    def memwell_rerankers() -> list[RerankerSpec]:
        spec = RerankerSpec(
            id="overlap", create=lambda ctx: reranker, default_model="o", transport="local"
        )
        return [spec]

    return SimpleNamespace(memwell_rerankers=memwell_rerankers)


def layers(memory: object) -> list[Any]:
    """Every manager of ``open_memory``'s stack, from the top down to the backend."""
    stack = [memory]
    while (below := unwrap_once(stack[-1])) is not None:
        stack.append(below)
    return stack


def unwrap_once(manager: object) -> object | None:
    if isinstance(manager, DelegatingManager):
        return manager.inner
    if isinstance(manager, FallbackMemoryManager):
        return manager.active
    return None


class Trace:
    """Every layer's ``search_batch`` call (the layer's class, the queries, the options), and
    every call of a layer's keyword-argument API below the top."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, stack: list[Any]) -> None:
        self.batches: list[tuple[str, list[str], SearchOptions]] = []
        self.unpacked: list[str] = []
        for depth, layer in enumerate(stack):
            name = type(layer).__name__
            real = layer.search_batch

            def batch(
                queries: Sequence[str],
                options: SearchOptions,
                _name: str = name,
                _real: Any = real,
            ) -> Any:
                self.batches.append((_name, list(queries), options))
                return _real(queries, options)

            monkeypatch.setattr(layer, "search_batch", batch)
            if depth == 0:
                continue
            for method in ("search", "search_many"):

                def unpacked(*args: Any, _label: str = f"{name}.{method}", **kwargs: Any) -> Any:
                    self.unpacked.append(_label)
                    raise AssertionError(f"{_label} called with keyword arguments")

                monkeypatch.setattr(layer, method, unpacked)


@pytest.mark.parametrize("backend", ["builtin", "jsonfile"])
def test_the_options_record_built_at_the_top_reaches_the_backend_itself(
    open_ws: OpenFn,
    registry: PluginRegistry,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    backend: str,
) -> None:
    """The recall cache (and the fallback, in front of a third-party backend) pass the one
    record down: no layer rebuilds it, none unpacks it into keyword arguments."""
    registry.register(memwell_jsonfile.plugin, "jsonfile")
    memory = open_ws(write_workspace(tmp_path / "ws", FILES), backend=backend)
    memory.sync()
    stack = layers(memory)
    expected = ["RecallCachedManager"]
    if backend == "jsonfile":
        expected += ["FallbackMemoryManager", "JsonFileManager"]
    else:
        expected += ["SqliteMemoryManager"]
    assert [type(layer).__name__ for layer in stack] == expected
    trace = Trace(monkeypatch, stack)

    found = memory.search_many(
        ["staging checklist", "tomatoes watering"],
        max_results=3,
        min_score=0.0,
        session_key="s1",
        sources=["memory"],
    )

    assert all(found) and not trace.unpacked
    assert [name for name, _, _ in trace.batches] == expected
    records = {id(options) for _, _, options in trace.batches}
    assert len(records) == 1, "a layer rebuilt the options record"
    options = trace.batches[0][2]
    assert options == SearchOptions(
        max_results=3, min_score=0.0, session_key="s1", sources=frozenset({"memory"})
    )
    # the queries the recall cache cut are the objects the backend gets
    top_queries = trace.batches[1][1]
    assert all(isinstance(q, ParsedQuery) for q in top_queries)
    assert [id(q) for q in trace.batches[-1][1]] == [id(q) for q in top_queries]


def test_a_reranked_batch_reaches_the_backend_as_one_batch(
    open_ws: OpenFn, registry: PluginRegistry, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The rerank stage asks the backend for the whole batch at once (with its wider options,
    derived from the caller's record), then reranks each query's hits."""
    reranker = WordOverlap()
    registry.register(overlap_plugin(reranker), "overlap")
    memory = open_ws(
        write_workspace(tmp_path / "ws", FILES),
        rerank={"provider": "overlap", "candidates": 8},
        recall_tracking={"enabled": False},
    )
    memory.sync()
    stack = layers(memory)
    assert [type(layer).__name__ for layer in stack] == [
        "RecallCachedManager",
        "RerankingManager",
        "SqliteMemoryManager",
    ]
    trace = Trace(monkeypatch, stack)
    queries = ["staging checklist", "tomatoes watering", "deploy friday"]

    found = memory.search_many(queries, max_results=2, min_score=0.0)

    assert not trace.unpacked
    assert [(name, len(asked)) for name, asked, _ in trace.batches] == [
        ("RecallCachedManager", 3),
        ("RerankingManager", 3),
        ("SqliteMemoryManager", 3),
    ]
    top, rerank, backend = (options for _, _, options in trace.batches)
    assert rerank is top
    assert backend == msgspec.structs.replace(top, max_results=8, min_score=0.0)
    assert reranker.queries == queries
    assert [len(hits) for hits in found] == [2, 2, 2]
    assert found[1][0].path == "memory/garden.md"
