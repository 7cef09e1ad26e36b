"""The Trigger Engine: a query's route lifts the store it asks for, on the builtin backend."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import Scripted, textgen_plugin
from memwell.cli.main import cli
from memwell.contract.manager import MemorySearchManager
from memwell.recall.manager import RecallCachedManager
from memwell.registry.plugins import PluginRegistry
from memwell.retrieval.routing import route_query
from memwell.textgen.router import parse_kinds

OpenFn = Callable[..., MemorySearchManager]
FILES = {
    # the daily note matches every query best; each store matches it only in part
    "memory/2026-10-01.md": "Deploy the API image: build the API image, push the API image.\n"
    "Kiran Okafor always prefers green tea; tea with Kiran Okafor.\n",
    "memory/procedures/deploy-the-api.md": "# How to deploy the API\n\n1. Build.\n2. Push.\n",
    "memory/graph/entities/kiran-okafor.md": "# Kiran Okafor\n\n- Kiran Okafor joined in May.\n",
    "memory/vault/drinks.md": "Kiran: always green.\n",
}


@pytest.fixture
def routed(tmp_path: Path) -> Path:
    ws = tmp_path / "routed"
    for rel, text in FILES.items():
        (ws / rel).parent.mkdir(parents=True, exist_ok=True)
        (ws / rel).write_text(text)
    return ws


def scores(open_ws: OpenFn, ws: Path, query: str, boost: float) -> dict[str, float]:
    memory = open_ws(ws, query={"hybrid": {"route_boost": boost}})  # hybrid: hash vectors
    memory.sync(reason="test")
    return {hit.path: hit.score for hit in memory.search(query, min_score=0.0, max_results=10)}


@pytest.mark.parametrize(
    ("query", "favoured"),
    [
        ("how do I deploy the API image", "memory/procedures/deploy-the-api.md"),
        ("what does Kiran Okafor drink, tea?", "memory/graph/entities/kiran-okafor.md"),
        ("which tea does kiran always prefer", "memory/vault/drinks.md"),
    ],
)
def test_the_route_lifts_only_the_store_the_query_asks_for(
    open_ws: OpenFn, routed: Path, query: str, favoured: str
) -> None:
    plain = scores(open_ws, routed, query, 0.0)
    lifted = scores(open_ws, routed, query, 0.15)
    assert max(plain, key=lambda p: plain[p]) != favoured  # keyword + vector alone
    assert lifted[favoured] == pytest.approx(min(1.0, plain[favoured] + 0.15))
    assert lifted[favoured] > plain[favoured]
    assert {p: s for p, s in lifted.items() if p != favoured} == {
        p: s for p, s in plain.items() if p != favoured
    }
    strong = scores(open_ws, routed, query, 0.6)
    assert max(strong, key=lambda p: strong[p]) == favoured


def test_route_kinds() -> None:
    assert route_query("steps to rotate keys").kinds == ("procedure",)
    named = route_query("who is Ines Duarte?")
    assert named.kinds == ("entity",)
    assert named.entities == ("memory/graph/entities/ines-duarte.md",)
    assert route_query("does she never eat meat").kinds == ("preference",)
    assert route_query("what happened yesterday").kinds == ()
    assert not route_query("how do I deploy").favours("memory/2026-10-01.md")


def test_search_json_shows_the_route(routed: Path) -> None:
    args = ["--provider", "none", "-w", str(routed), "search", "--json", "how to deploy"]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["route"] == {"kinds": ["procedure"], "entities": []}


# --- [query.hybrid] router = "textgen" ----------------------------------------------------------

PROCEDURES = "memory/procedures/deploy-the-api.md"
ROUTER = {"router": "textgen"}


def test_the_textgen_router_routes_what_keywords_miss_once_per_query(
    open_ws: OpenFn, routed: Path, registry: PluginRegistry
) -> None:
    generator = Scripted("procedure")
    textgen_plugin(generator, registry)
    query = "deploy the api image"  # no "how do I", no name: keyword routing leaves it alone
    assert route_query(query).kinds == ()
    memory = open_ws(routed, query={"hybrid": ROUTER}, textgen={"provider": "scripted"})
    memory.sync(reason="test")
    plain = scores(open_ws, routed, query, 0.0)
    lifted = {h.path: h.score for h in memory.search(query, min_score=0.0, max_results=10)}
    assert lifted[PROCEDURES] == pytest.approx(min(1.0, plain[PROCEDURES] + 0.15))
    memory.search(query + " ", min_score=0.0)  # the same query: the router's cache answers
    assert isinstance(memory, RecallCachedManager)
    assert memory.route(query).to_dict() == {"kinds": ["procedure"], "entities": []}
    assert generator.prompts == [query]
    assert generator.systems[0] and "never follow" in generator.systems[0]


def test_a_failing_router_falls_back_to_keyword_routing(
    open_ws: OpenFn, routed: Path, registry: PluginRegistry, caplog: pytest.LogCaptureFixture
) -> None:
    textgen_plugin(Scripted(None), registry)
    memory = open_ws(routed, query={"hybrid": ROUTER}, textgen={"provider": "scripted"})
    assert isinstance(memory, RecallCachedManager)
    query = "how do I deploy the API image"
    assert memory.route(query) == route_query(query)
    assert "keyword routing" in caplog.text


def test_parse_kinds_keeps_only_known_kinds_in_order() -> None:
    assert parse_kinds("Entity, procedure; also: shopping") == ("procedure", "entity")
    assert parse_kinds("none") == ()
