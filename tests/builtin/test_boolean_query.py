"""``+must -must_not`` terms in queries, on the builtin backend in both search modes."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from memwell.contract.manager import MemorySearchManager
from memwell.retrieval.boolean import compose_query, parse_boolean

OpenFn = Callable[..., MemorySearchManager]
FILES = {
    "memory/a.md": "Deploy checklist for staging: run the smoke tests.\n",
    "memory/b.md": "Deploy checklist for production: never on a Friday.\n",
    "memory/c.md": "Deploy checklist for staging on Friday afternoons.\n",
}


@pytest.fixture(params=["none", "hash"])
def memory(request: pytest.FixtureRequest, open_ws: OpenFn, tmp_path: Path) -> MemorySearchManager:
    ws = tmp_path / "bool"
    for rel, text in FILES.items():
        (ws / rel).parent.mkdir(parents=True, exist_ok=True)
        (ws / rel).write_text(text)
    manager = open_ws(ws, provider=request.param)
    manager.sync(reason="test")
    return manager


def paths(memory: MemorySearchManager, query: str) -> set[str]:
    return {hit.path for hit in memory.search(query, min_score=0.0, max_results=10)}


def test_must_and_must_not_filter_the_hits(memory: MemorySearchManager) -> None:
    assert paths(memory, "deploy checklist") == set(FILES)
    assert paths(memory, "deploy checklist +staging") == {"memory/a.md", "memory/c.md"}
    assert paths(memory, "deploy checklist +staging -friday") == {"memory/a.md"}
    assert paths(memory, "deploy checklist -friday") == {"memory/a.md"}
    assert paths(memory, 'deploy +"smoke tests"') == {"memory/a.md"}
    api = compose_query("deploy checklist", must=["staging"], must_not=["Friday"])
    assert api == "deploy checklist +staging -Friday"
    assert paths(memory, api) == {"memory/a.md"}


def test_operators_only_at_the_start_of_a_word_that_starts_with_a_letter() -> None:
    assert not parse_boolean("e-mail the C++ team about E2f-1, -2, -3 and +1 nucleosomes")
    terms = parse_boolean('+Staging -"friday night" plain')
    assert terms.must == (("staging",),) and terms.must_not == (("friday", "night"),)


def test_compose_refuses_a_quote_or_a_blank_term() -> None:
    with pytest.raises(ValueError, match="boolean term"):
        compose_query("x", must=['say "hi"'])
    with pytest.raises(ValueError, match="boolean term"):
        compose_query("x", must_not=[" "])


@given(
    should=st.text(alphabet="abc xyz", max_size=20),
    must=st.lists(st.text(alphabet="abcxyz", min_size=1, max_size=6), max_size=3),
    must_not=st.lists(st.text(alphabet="abcxyz", min_size=1, max_size=6), max_size=3),
)
def test_compose_then_parse_round_trips(should: str, must: list[str], must_not: list[str]) -> None:
    terms = parse_boolean(compose_query(should, must=must, must_not=must_not))
    assert terms.must == tuple((t,) for t in must)
    assert terms.must_not == tuple((t,) for t in must_not)


def test_the_recall_cache_never_mixes_filtered_and_plain_answers(
    memory: MemorySearchManager,
) -> None:
    filtered = paths(memory, "deploy checklist +staging -friday")
    assert paths(memory, "deploy checklist") == set(FILES)  # not the filtered answer
    assert paths(memory, "deploy checklist +staging -friday") == filtered == {"memory/a.md"}


def test_a_required_term_is_part_of_the_keyword_query_not_only_a_filter(
    open_ws: OpenFn, tmp_path: Path
) -> None:
    """The one note holding both ``deploy`` and ``staging`` ranks far below the pool of the
    plain query (``staging`` is in most notes, so it weighs nothing there, and fifteen notes
    repeat ``deploy checklist``): filtering that pool would find nothing. The FTS5 query
    ``(deploy OR checklist) AND staging`` retrieves it."""
    ws = tmp_path / "pool"
    (ws / "memory").mkdir(parents=True)
    for i in range(15):
        (ws / f"memory/list{i}.md").write_text(f"Deploy checklist {i}: deploy checklist.\n")
    for i in range(21):
        (ws / f"memory/env{i}.md").write_text(f"Staging host {i} runs the nightly staging job.\n")
    filler = " ".join(f"word{i}" for i in range(80))
    (ws / "memory/target.md").write_text(f"We deploy to staging after lunch. {filler}\n")
    memory = open_ws(ws, provider="none")
    memory.sync(reason="test")
    plain = memory.search("deploy checklist", max_results=1, min_score=0.0)
    assert plain and plain[0].path.startswith("memory/list")
    hits = memory.search("deploy checklist +staging", max_results=1, min_score=0.0)
    assert [h.path for h in hits] == ["memory/target.md"]
    excluded = memory.search("deploy staging -lunch", max_results=20, min_score=0.0)
    assert "memory/target.md" not in {h.path for h in excluded}


def test_the_builtin_backend_declares_boolean_queries() -> None:
    from memwell.registry.plugins import PluginRegistry

    registry = PluginRegistry()
    assert "boolean" in registry.backends["builtin"].capabilities
    assert "boolean" not in registry.backends["postgres"].capabilities
