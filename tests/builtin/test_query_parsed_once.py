"""One search, through every layer ``open_memory`` stacks, cuts its query once, parses it once
per kind, and reaches the backend as one batch (issue 44 item 3)."""

from __future__ import annotations

import importlib
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from conftest import OpenFn
from memwell.retrieval import parsed_query
from memwell.retrieval.parsed_query import ParsedQuery
from memwell.runtime.fallback import unwrap
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
    ("memwell.retrieval.cjk", "_letters"),
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
    """No bounce: the backend's ``search_many`` runs once, its ``search`` never."""
    memory = open_ws(write_workspace(tmp_path / "ws", FILES))
    memory.sync()
    backend: Any = unwrap(memory)
    seen: list[str] = []
    for name in ("search", "search_many", "_search_many"):
        real = getattr(backend, name)

        def spy(*args: Any, _name: str = name, _real: Any = real, **kwargs: Any) -> Any:
            seen.append(_name)
            return _real(*args, **kwargs)

        monkeypatch.setattr(backend, name, spy)
    assert memory.search("staging checklist", min_score=0.0)
    assert seen == ["search_many", "_search_many"]
