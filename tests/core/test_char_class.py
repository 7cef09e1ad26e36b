"""CharClass answers as the regex class it stands for, by bisection and by the regex alike."""

from __future__ import annotations

import operator
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from memwell.retrieval import char_class
from memwell.retrieval.char_class import CharClass
from memwell.retrieval.cjk import (
    CJK_CLASS,
    HAN_CLASS,
    HANGUL_CLASS,
    HIRAGANA_CLASS,
    KATAKANA_CLASS,
    segment_for_fts,
    segment_for_index,
    segment_query_terms,
)
from memwell.util.lazy_import import is_compiled

CLASSES = [CJK_CLASS, HAN_CLASS, HIRAGANA_CLASS + KATAKANA_CLASS, HANGUL_CLASS, "a-cx\u3041-\u3043"]
# each class's edges and their neighbours, plus ASCII, Latin, punctuation and astral characters
EDGES = sorted(
    {
        chr(code)
        for body in CLASSES
        for lo, hi in char_class._ranges(body)
        for code in (lo - 1, lo, hi, hi + 1)
        if 0 < code < 0x110000 and not 0xD800 <= code <= 0xDFFF
    }
)
CHARS = st.one_of(st.sampled_from(EDGES), st.sampled_from("ab Z9-.é。、・设计アか한\U00020000"))
TEXTS = st.text(alphabet=CHARS, max_size=300)


@pytest.mark.parametrize("body", CLASSES)
def test_membership_is_the_regex_class(body: str) -> None:
    chars, regex = CharClass(body), re.compile(f"[{body}]")
    for char in EDGES:
        assert (char in chars) == (regex.fullmatch(char) is not None), hex(ord(char))
    assert "ab" not in chars and "" not in chars and 3 not in chars


@given(st.sampled_from(CLASSES), TEXTS)
@settings(max_examples=300, deadline=None)
def test_runs_and_presence_are_the_regexs_on_short_and_long_texts(body: str, text: str) -> None:
    chars, run = CharClass(body), re.compile(f"[{body}]+")
    spans = [m.span() for m in run.finditer(text)]
    assert list(chars.runs(text)) == spans
    assert chars.found_in(text) == bool(spans)
    for piece in (text[:10], text[:200]):  # under and over SCAN_LIMIT
        assert list(chars.runs(piece)) == [m.span() for m in run.finditer(piece)]
        assert chars.found_in(piece) == (run.search(piece) is not None)
        assert chars.blank(piece) == run.sub(" ", piece)


@given(TEXTS)
@settings(max_examples=300, deadline=None)
def test_segmentation_is_the_regex_substitutions(text: str) -> None:
    run = re.compile(f"[{CJK_CLASS}]+")

    def bigrams(r: str) -> str:
        return " ".join(map(operator.add, r, r[1:]))

    index = run.sub(lambda m: f" {' '.join(m.group())} {bigrams(m.group())} ", text)
    fts = run.sub(lambda m: f" {bigrams(m.group())} {m.group()[-1]} ", text)
    assert segment_for_index(text) == index
    assert segment_for_fts(text) == fts
    query = [t for r in run.findall(text) for t in ([r] if len(r) == 1 else bigrams(r).split())]
    assert segment_query_terms(text) == query


def test_a_class_compiles_its_regex_only_once_it_has_scanned_its_budget() -> None:
    chars, text = CharClass(HAN_CLASS), "设计 api 设计。北京"
    scanned = 0
    while not is_compiled(chars._run):
        assert list(chars.runs(text)) == [(0, 2), (7, 9), (10, 12)]
        scanned += len(text)
        assert scanned < 2 * char_class.SCAN_BUDGET, "the regex takes over after the budget"
    assert scanned > char_class.SCAN_BUDGET  # a one-shot query never pays for the compile
    assert list(chars.runs(text)) == [(0, 2), (7, 9), (10, 12)]
    long_text = "x" * char_class.SCAN_LIMIT + "设"
    fresh = CharClass(HAN_CLASS)
    assert fresh.found_in(long_text) and is_compiled(fresh._run)  # long texts go to the regex
