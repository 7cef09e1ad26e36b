"""Keyword evidence weighed by the share of the question a hit covers (issue 43)."""

from __future__ import annotations

import sqlite3

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from memwell.retrieval.candidate import Candidate
from memwell.retrieval.coverage import (
    coverage,
    idf,
    measure_coverage,
    stem_weights,
    term_weights,
)
from memwell.retrieval.pipeline import evidence
from memwell.retrieval.stems import TOKENIZER, stem, stems


def cand(text: str, text_score: float = 1.0) -> Candidate:
    return Candidate(id=text, path="n.md", start_line=1, end_line=1, text=text,
                     text_score=text_score)  # fmt: skip


def fts5_matching(documents: list[str], term: str) -> set[int]:
    """The indexes of ``documents`` a real FTS5 table with the index's tokenizer finds
    ``term`` in."""
    conn = sqlite3.connect(":memory:")
    conn.execute(f"CREATE VIRTUAL TABLE t USING fts5(x, tokenize='{TOKENIZER}')")
    conn.executemany("INSERT INTO t(rowid, x) VALUES (?, ?)", enumerate(documents))
    quoted = '"' + term.replace('"', '""') + '"'
    return {row[0] for row in conn.execute("SELECT rowid FROM t WHERE t MATCH ?", (quoted,))}


@pytest.mark.parametrize(
    ("word", "expected"),
    [("going", "go"), ("parked", "park"), ("others", "other"), ("Canción", "cancion")],
)
def test_stems_are_the_index_stems(word: str, expected: str) -> None:
    assert stem(word) == expected


@settings(deadline=None, max_examples=50)
@given(st.lists(st.from_regex(r"[a-zàáâäçèéêëíîïñóôöúûü]{1,12}", fullmatch=True), max_size=6))
def test_words_with_one_stem_match_each_other_in_fts5(words: list[str]) -> None:
    of = stems(words)
    for a in words:
        # same stem <=> FTS5 (porter) finds the word as a query in a document of the other
        assert fts5_matching(words, a) == {i for i, b in enumerate(words) if of[b] == of[a]}


def test_idf_favours_rare_terms_and_never_vanishes() -> None:
    assert idf(0, 100) > idf(1, 100) > idf(50, 100) > idf(100, 100) > 0
    assert idf(1, 2) > 0  # a two-chunk workspace still weighs its words


def test_a_hit_holding_one_of_three_equal_terms_covers_a_third() -> None:
    weights = term_weights(["sourdough", "bread", "bake"], {"sourdough": 3, "bread": 3, "bake": 3},
                           100)  # fmt: skip
    assert coverage(weights, cand("Fresh bread from the corner shop.")) == pytest.approx(1 / 3)
    # stems: "baked" and "breads" hold "bake" and "bread"
    both = coverage(weights, cand("We baked two breads."))
    assert both == pytest.approx(2 / 3)


def test_a_term_in_no_chunk_weighs_most() -> None:
    # "sourdough" is in no chunk: the note holding only "bread" covers less than half
    weights = term_weights(["sourdough", "bread"], {"sourdough": 0, "bread": 3}, 100)
    assert coverage(weights, cand("bread")) < 0.5 < coverage(weights, cand("sourdough bread"))


def test_cjk_terms_are_held_by_containment() -> None:
    weights = term_weights(["北京", "天气"], {"北京": 2, "天气": 2}, 10)
    assert coverage(weights, cand("我在北京工作")) == pytest.approx(0.5)


def test_function_words_and_their_stems_weigh_nothing() -> None:
    # "using" is indexed as "us", "going" as "go": neither can carry a hit
    weights = term_weights(["using", "going", "books"], {"using": 1, "going": 1, "books": 1}, 10)
    assert weights["us"] == weights["go"] == 0.0 < weights["book"]
    assert coverage(weights, cand("Reports go out to us on Monday")) == 0.0
    assert coverage(weights, cand("a shelf of books")) == 1.0


def test_the_floor_weighs_keyword_scores_by_coverage() -> None:
    weights = term_weights(["staging", "rehearsal"], {"staging": 1, "rehearsal": 1}, 10)
    full, half = cand("rehearsal staging", 0.8), cand("staging database", 1.0)
    measure_coverage([full, half], weights)
    assert (full.coverage, half.coverage) == (1.0, pytest.approx(0.5))
    # the ranking score is untouched; the evidence keeps a quarter of the half-covering hit's
    assert half.text_score == 1.0
    assert evidence(half, 0.7, 0.3, 2.0) == pytest.approx(0.3 * 0.25)
    assert evidence(full, 0.7, 0.3, 2.0) == pytest.approx(0.3 * 0.8)
    assert evidence(half, 0.7, 0.3, 0.0) == pytest.approx(0.3), "power 0: keyword score in full"


def test_stem_weights_are_term_weights_of_stemmed_terms() -> None:
    """A backend that stems its own terms weighs them as the builtin weighs the words they
    come from; a function word's stem weighs nothing."""
    words = ["staging", "rehearsals", "using"]
    frequencies = {"staging": 2, "rehearsals": 0, "using": 5}
    by_stem = {stem(w): frequencies[w] for w in words}
    assert stem_weights(by_stem, 10) == term_weights(words, frequencies, 10)
    assert stem_weights(by_stem, 10)[stem("using")] == 0.0


def test_coverage_counts_the_backends_own_terms_when_given() -> None:
    weights = {"stage": 1.0, "rehears": 3.0}
    note = cand("The staging database moved.")
    assert coverage(weights, note, held=lambda c: {"the", "stage", "databas"}) == 0.25
    assert coverage(weights, note, held=lambda c: set()) == 0.0
    measure_coverage([note], weights, held=lambda c: ["rehears", "stage"])
    assert note.coverage == 1.0
