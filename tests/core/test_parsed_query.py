"""ParsedQuery: cut once, parsed once per kind and options, and still a plain query text."""

from __future__ import annotations

from memwell.retrieval.boolean import parse_boolean
from memwell.retrieval.fts_query import build_fts_query, query_terms
from memwell.retrieval.parsed_query import ParsedQuery, per_query
from memwell.retrieval.query_limit import bound_query


def test_bound_cuts_like_bound_query_and_keeps_a_query_that_fits() -> None:
    long = "  deploy the staging checklist  " + "word " * 100
    query = ParsedQuery.bound(long, 40)
    assert query == bound_query(long, 40) and isinstance(query, ParsedQuery)
    assert ParsedQuery.bound(query, 40) is query
    assert ParsedQuery.bound(query, 4000) is query  # it fits: no second cut
    shorter = ParsedQuery.bound(query, 10)
    assert shorter == bound_query(query, 10) and shorter is not query


def test_a_parse_is_computed_once_per_query_and_options() -> None:
    seen: list[tuple[str, int]] = []

    @per_query
    def words(query: str, limit: int = 2) -> tuple[str, ...]:
        seen.append((query, limit))
        return tuple(query.split()[:limit])

    query = ParsedQuery.bound("a b c", 100)
    assert words(query) == words(query) == ("a", "b")
    assert words(query, limit=3) == ("a", "b", "c")
    assert words(query, limit=3) == ("a", "b", "c")
    assert seen == [("a b c", 2), ("a b c", 3)]
    assert words("a b c") == words("a b c")  # a plain str is parsed on every call
    assert seen[2:] == [("a b c", 2), ("a b c", 2)]


def test_the_shipped_parsers_answer_a_parsed_query_as_its_text() -> None:
    text = "when did Ines +deploy 北京机房 -friday"
    query = ParsedQuery.bound(text, 100)
    assert parse_boolean(query) == parse_boolean(text)
    assert parse_boolean(query) is parse_boolean(query)
    assert query_terms(query) == query_terms(text)
    assert build_fts_query(query, tokenizer="trigram") == build_fts_query(text, tokenizer="trigram")
    assert build_fts_query(query) == build_fts_query(text)
    assert build_fts_query(query) is not build_fts_query(query, tokenizer="trigram")
