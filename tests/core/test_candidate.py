"""Candidate.with_score: the ranking's cheap copy must equal dataclasses.replace."""

from __future__ import annotations

from dataclasses import dataclass, replace

from hypothesis import given
from hypothesis import strategies as st
from memwell.retrieval.candidate import Candidate


@dataclass
class _Tagged(Candidate):
    tag: str = ""


@given(
    text=st.text(max_size=20),
    text_score=st.floats(0, 1),
    score=st.floats(0, 1),
    new=st.floats(allow_nan=False),
)
def test_with_score_is_replace_of_the_score(
    text: str, text_score: float, score: float, new: float
) -> None:
    original = Candidate("id", "memory/a.md", 1, 2, text, text_score=text_score, score=score)
    before = replace(original)
    copy = original.with_score(new)
    assert copy == replace(original, score=new) and copy is not original
    assert original == before, "the input candidate is left as it was"


def test_with_score_keeps_a_subclass_and_its_fields() -> None:
    tagged = _Tagged("id", "memory/a.md", 1, 2, "text", terms="a b", tag="kept")
    copy = tagged.with_score(0.5)
    assert type(copy) is _Tagged and copy.tag == "kept" and copy.terms == "a b"
    assert copy.score == 0.5 and tagged.score == 0.0
    copy.text = "changed"
    assert tagged.text == "text", "the copy does not share its attributes' storage"
