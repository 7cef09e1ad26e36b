from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from memwell.retrieval.candidate import Candidate
from memwell.retrieval.hybrid import merge_rrf, merge_weighted, normalize_weights, relaxed_filter


def cand(
    cid: str, *, vs: float = 0.0, ts: float = 0.0, score: float = 0.0, text: str = ""
) -> Candidate:
    return Candidate(
        id=cid,
        path=f"memory/{cid}.md",
        start_line=1,
        end_line=2,
        text=text or f"text {cid}",
        vector_score=vs,
        text_score=ts,
        score=score,
    )


@pytest.mark.parametrize(
    ("weights", "expected"),
    [
        ((0.7, 0.3), (0.7, 0.3)),
        ((0.35, 0.15), (0.7, 0.3)),
        ((1.0, 1.0), (0.5, 0.5)),
        ((2.0, -1.0), (1.0, 0.0)),
        ((0.0, 0.0), (0.7, 0.3)),
        ((-3.0, -3.0), (0.7, 0.3)),
    ],
)
def test_normalize_weights(weights: tuple[float, float], expected: tuple[float, float]) -> None:
    assert normalize_weights(*weights) == pytest.approx(expected)


def test_merge_weighted_unions_by_id_with_weighted_sum() -> None:
    vector = [cand("a", vs=0.9), cand("b", vs=0.5)]
    keyword = [cand("a", ts=1.0), cand("c", ts=0.8)]
    merged = merge_weighted(vector, keyword, vector_weight=0.7, text_weight=0.3)
    by_id = {c.id: c for c in merged}
    assert [c.id for c in merged] == ["a", "b", "c"]
    assert by_id["a"].score == pytest.approx(0.7 * 0.9 + 0.3 * 1.0)
    assert (by_id["a"].vector_score, by_id["a"].text_score) == (0.9, 1.0)
    assert by_id["b"].score == pytest.approx(0.35)
    assert by_id["b"].text_score == 0.0
    assert by_id["c"].score == pytest.approx(0.24)
    assert by_id["c"].vector_score == 0.0


def test_merge_weighted_normalises_weights() -> None:
    merged = merge_weighted(
        [cand("a", vs=0.6)], [cand("a", ts=0.2)], vector_weight=1, text_weight=1
    )
    assert merged[0].score == pytest.approx(0.4)


def test_vector_entries_start_with_zero_text_score() -> None:
    merged = merge_weighted([cand("a", vs=0.5, ts=0.9)], [], vector_weight=0.7, text_weight=0.3)
    assert merged[0].text_score == 0.0
    assert merged[0].score == pytest.approx(0.35)


def test_keyword_snippet_wins_on_overlap_when_non_empty() -> None:
    vector = [cand("a", vs=0.9, text="vector text"), cand("b", vs=0.9, text="vector b")]
    keyword = [
        cand("a", ts=1.0, text="keyword text"),
        Candidate("b", "p", 1, 1, "", text_score=1.0),
    ]
    merged = {c.id: c for c in merge_weighted(vector, keyword, vector_weight=0.7, text_weight=0.3)}
    assert merged["a"].text == "keyword text"
    assert merged["b"].text == "vector b"


def test_merge_returns_new_objects_and_keeps_inputs() -> None:
    vector = [cand("a", vs=0.9)]
    keyword = [cand("a", ts=1.0)]
    merged = merge_weighted(vector, keyword, vector_weight=0.7, text_weight=0.3)
    assert merged[0] is not vector[0]
    assert vector[0].score == 0.0
    assert vector[0].text_score == 0.0
    assert keyword[0].vector_score == 0.0


def test_merge_weighted_sort_is_stable_on_ties() -> None:
    vector = [cand("v1", vs=0.5), cand("v2", vs=0.5)]
    keyword = [cand("k1", ts=0.5), cand("v2", ts=0.0)]
    merged = merge_weighted(vector, keyword, vector_weight=0.5, text_weight=0.5)
    assert [c.score for c in merged] == [0.25, 0.25, 0.25]
    assert [c.id for c in merged] == ["v1", "v2", "k1"]


def test_rrf_first_in_both_lists_scores_one_and_leads() -> None:
    vector = [cand("a", vs=0.9), cand("b", vs=0.8), cand("c", vs=0.7)]
    keyword = [cand("a", ts=0.4), cand("d", ts=0.3)]
    merged = merge_rrf(vector, keyword)
    assert [c.id for c in merged] == ["a", "b", "d", "c"]
    assert merged[0].score == pytest.approx(1.0)
    assert (merged[0].vector_score, merged[0].text_score) == (0.9, 0.4)


def test_rrf_exact_scores_and_ranking_by_position() -> None:
    vector = [cand("x", vs=0.1), cand("y", vs=0.99)]
    merged = {c.id: c for c in merge_rrf(vector, [], k=60)}
    assert merged["x"].score == pytest.approx(0.5 * 61 / 61)
    assert merged["y"].score == pytest.approx(0.5 * 61 / 62)
    assert merged["x"].score > merged["y"].score


def test_rrf_hit_in_both_lists_beats_single_list_hits() -> None:
    vector = [cand("v", vs=1.0), cand("both", vs=0.2)]
    keyword = [cand("k", ts=1.0), cand("both", ts=0.2)]
    assert merge_rrf(vector, keyword)[0].id == "both"


def test_rrf_weights_shift_the_order() -> None:
    vector = [cand("v", vs=1.0)]
    keyword = [cand("k", ts=1.0)]
    assert [c.id for c in merge_rrf(vector, keyword, vector_weight=0.2, text_weight=0.8)] == [
        "k",
        "v",
    ]
    merged = merge_rrf(vector, keyword, vector_weight=1.0, text_weight=0.0)
    assert [(c.id, c.score) for c in merged] == [("v", pytest.approx(1.0)), ("k", 0.0)]


def test_rrf_keyword_text_wins_and_negative_k_rejected() -> None:
    merged = merge_rrf([cand("a", text="vec")], [cand("a", text="kw")])
    assert merged[0].text == "kw"
    with pytest.raises(ValueError, match="k must be"):
        merge_rrf([], [], k=-1)


def test_relaxed_filter_strict_survivors_are_capped() -> None:
    merged = [
        cand("a", score=0.9),
        cand("b", score=0.5),
        cand("c", score=0.4),
        cand("d", score=0.1),
    ]
    out = relaxed_filter(merged, {"d"}, min_score=0.35, text_weight=0.3, max_results=2)
    assert [c.id for c in out] == ["a", "b"]


def test_relaxed_filter_without_keyword_hits_returns_strict_result() -> None:
    merged = [cand("a", score=0.3)]
    assert relaxed_filter(merged, set(), min_score=0.35, text_weight=0.3, max_results=6) == []


def test_relaxed_filter_rescues_pure_keyword_hits_only() -> None:
    merged = [cand("vec", score=0.34), cand("kw", score=0.3), cand("weak", score=0.2)]
    out = relaxed_filter(merged, {"kw", "weak"}, min_score=0.35, text_weight=0.3, max_results=6)
    assert [c.id for c in out] == ["kw"]


def test_relaxed_filter_floor_is_min_score_when_lower_than_text_weight() -> None:
    merged = [cand("kw", score=0.2)]
    assert relaxed_filter(merged, {"kw"}, min_score=0.25, text_weight=0.3, max_results=6) == []


def test_relaxed_filter_rescue_is_capped() -> None:
    merged = [cand(c, score=0.3) for c in "abc"]
    out = relaxed_filter(merged, {"a", "b", "c"}, min_score=0.35, text_weight=0.3, max_results=2)
    assert [c.id for c in out] == ["a", "b"]


IDS = [f"id{i}" for i in range(8)]
unit = st.floats(min_value=0.0, max_value=1.0)


@st.composite
def hit_lists(draw: st.DrawFn) -> tuple[list[Candidate], list[Candidate]]:
    vector_ids = draw(st.lists(st.sampled_from(IDS), unique=True))
    keyword_ids = draw(st.lists(st.sampled_from(IDS), unique=True))
    vector = [cand(i, vs=draw(unit)) for i in vector_ids]
    keyword = [cand(i, ts=draw(unit)) for i in keyword_ids]
    return vector, keyword


@settings(max_examples=200, deadline=None)
@given(hit_lists(), unit, unit, st.booleans())
def test_merge_properties(
    lists: tuple[list[Candidate], list[Candidate]], w_v: float, w_t: float, rrf: bool
) -> None:
    vector, keyword = lists
    if rrf:
        merged = merge_rrf(vector, keyword, vector_weight=w_v, text_weight=w_t)
    else:
        merged = merge_weighted(vector, keyword, vector_weight=w_v, text_weight=w_t)
    ids = [c.id for c in merged]
    assert len(ids) == len(set(ids))
    assert set(ids) == {c.id for c in vector} | {c.id for c in keyword}
    scores = [c.score for c in merged]
    assert all(0.0 <= s <= 1.0 + 1e-12 for s in scores)
    assert scores == sorted(scores, reverse=True)


def test_relaxed_filter_rescues_semantic_hits_diluted_by_weighting() -> None:
    strong = Candidate("v1", "a.md", 1, 2, "x", vector_score=0.45, score=0.7 * 0.45)
    weak = Candidate("v2", "b.md", 1, 2, "y", vector_score=0.2, score=0.7 * 0.2)
    out = relaxed_filter([strong, weak], set(), min_score=0.35, text_weight=0.3, max_results=6)
    assert [c.id for c in out] == ["v1"]
