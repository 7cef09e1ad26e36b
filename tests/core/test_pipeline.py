from __future__ import annotations

from collections.abc import Iterator

from hypothesis import given, settings
from hypothesis import strategies as st
from memwell.contract.config import HybridSettings
from memwell.retrieval.calibration import Calibration
from memwell.retrieval.candidate import Candidate
from memwell.retrieval.pipeline import (
    floor_vector_only,
    fuse_hybrid,
    keyword_floor,
    rank_candidates,
)


def cand(cid: str, score: float, **kw: float) -> Candidate:
    return Candidate(cid, f"memory/{cid}.md", 1, 1, f"text {cid}", score=score, **kw)


def no_mtime(path: str) -> float | None:
    return None


def test_rank_sorts_and_leaves_evergreen_scores_alone() -> None:
    hybrid = HybridSettings.model_validate({"temporal_decay": {"enabled": True}})
    out = rank_candidates([cand("a", 0.2), cand("b", 0.9)], hybrid, mtime_of=no_mtime)
    assert [c.id for c in out] == ["b", "a"] and out[0].score == 0.9


def test_fuse_weighted_and_rrf_share_the_floor() -> None:
    vector = [cand("v", 0.0, vector_score=0.9)]
    keyword = [cand("k", 0.0, text_score=1.0)]
    for fusion in ("weighted", "rrf"):
        hybrid = HybridSettings(fusion=fusion)
        out = fuse_hybrid(vector, keyword, hybrid, min_score=0.0, max_results=5, mtime_of=no_mtime)
        assert {c.id for c in out} == {"v", "k"}
        assert [c.score for c in out] == sorted((c.score for c in out), reverse=True)
    strict = fuse_hybrid(
        vector, keyword, HybridSettings(), min_score=0.99, max_results=5, mtime_of=no_mtime
    )
    assert {c.id for c in strict} == {"k"}, "the keyword hit is rescued, the weak vector one not"


def test_keyword_floor_falls_back_to_best_hits() -> None:
    ranked = [cand("a", 0.3), cand("b", 0.1)]
    assert [c.id for c in keyword_floor(ranked, 0.2, 5)] == ["a"]
    assert [c.id for c in keyword_floor(ranked, 0.9, 1)] == ["a"]


def test_a_keyword_hit_in_another_script_keeps_only_its_vector_evidence() -> None:
    """An English question matches a Chinese note only on a shared number: the note that the
    embedding finds closer must not lose to it (cross-lingual recall, issue 41)."""
    zh_number = Candidate("n", "memory/n.md", 1, 1, "黑豹队的防守只丢了 308 分，排名第六。")
    zh_answer = Candidate("a", "memory/a.md", 1, 1, "卡万·肖特以 11 次擒杀领先全队。")
    vector = [
        Candidate(**{**zh_answer.__dict__, "vector_score": 0.80}),
        Candidate(**{**zh_number.__dict__, "vector_score": 0.70}),
    ]
    keyword = [Candidate(**{**zh_number.__dict__, "text_score": 1.0})]
    question = "How many sacks did Kawann Short have in 308 games?"
    out = fuse_hybrid(
        vector,
        keyword,
        HybridSettings(),
        min_score=0.0,
        max_results=5,
        mtime_of=no_mtime,
        query=question,
    )
    assert [c.id for c in out] == ["a", "n"]
    assert [c.text_score for c in out] == [0.0, 0.0]
    # the same keyword hit in the question's own script still counts
    same = [Candidate("e", "memory/e.md", 1, 1, "The defense gave up 308 points.", text_score=1.0)]
    mixed = fuse_hybrid(
        vector,
        same,
        HybridSettings(),
        min_score=0.0,
        max_results=5,
        mtime_of=no_mtime,
        query=question,
    )
    assert {c.id: c.text_score for c in mixed}["e"] == 1.0


def test_vector_only_floor_judges_calibrated_scores() -> None:
    """The same cosine passes or fails ``min_score`` as it would in hybrid mode: 0.3 is
    above the unrelated anchor (0.06) but far from the related one (0.54), so it scores
    about 0.45 calibrated; raw cosines are kept as they are without a calibration."""
    cal = Calibration(unrelated=0.06, related=0.54)
    hits = [cand("near", 0.6, vector_score=0.6), cand("far", 0.1, vector_score=0.1)]
    out = floor_vector_only(hits, min_score=0.35, max_results=5, calibration=cal)
    assert [c.id for c in out] == ["near"]
    assert out[0].score == cal.score(0.6) > 0.6
    assert hits[0].score == 0.6  # the caller's candidates are not changed
    raw = floor_vector_only(hits, min_score=0.35, max_results=5, calibration=None)
    assert [(c.id, c.score) for c in raw] == [("near", 0.6)]
    assert floor_vector_only(hits, min_score=0.0, max_results=1, calibration=cal)[0].id == "near"


def test_keyword_floor_reads_only_as_far_as_it_needs() -> None:
    read: list[str] = []

    def stream() -> Iterator[Candidate]:
        for c in [cand("a", 0.9), cand("b", 0.8), cand("c", 0.1), cand("d", 0.7)]:
            read.append(c.id)
            yield c

    assert [c.id for c in keyword_floor(stream(), 0.5, 2)] == ["a", "b"]
    assert read == ["a", "b"]
    read.clear()
    assert [c.id for c in keyword_floor(stream(), 0.5, 5)] == ["a", "b", "d"]
    assert [c.id for c in keyword_floor(stream(), 0.95, 2)] == ["a", "b"], "best anyway"
    assert keyword_floor(stream(), 0.0, 0) == []


mmr_texts = st.sampled_from(["apple banana", "apple cherry", "date fig", "我们 喜欢", "grape"])


@settings(max_examples=150, deadline=None)
@given(
    st.lists(st.tuples(st.floats(0, 1), st.floats(0, 1), mmr_texts), min_size=1, max_size=12),
    st.floats(0, 0.9),
    st.integers(0, 8),
)
def test_fuse_with_mmr_keeps_the_floored_prefix_of_the_whole_mmr_order(
    raw: list[tuple[float, float, str]], min_score: float, max_results: int
) -> None:
    """The lazy MMR the floor consumes gives exactly the eager order, floored and cut."""
    vector = [
        Candidate(str(i), f"memory/{i}.md", 1, 1, text, vector_score=v)
        for i, (v, _, text) in enumerate(raw)
    ]
    keyword = [
        Candidate(str(i), f"memory/{i}.md", 1, 1, text, text_score=t)
        for i, (_, t, text) in enumerate(raw)
        if t > 0.2
    ]
    hybrid = HybridSettings.model_validate({"mmr": {"enabled": True, "lambda": 0.85}})
    calibration = Calibration(unrelated=0.06, related=0.54)
    out = fuse_hybrid(
        vector,
        keyword,
        hybrid,
        min_score=min_score,
        max_results=max_results,
        mtime_of=no_mtime,
        calibration=calibration,
    )
    everything = fuse_hybrid(
        vector,
        keyword,
        hybrid,
        min_score=min_score,
        max_results=len(raw),
        mtime_of=no_mtime,
        calibration=calibration,
    )
    assert [c.id for c in out] == [c.id for c in everything][:max_results]
    plain = fuse_hybrid(
        vector,
        keyword,
        hybrid.model_copy(update={"mmr": hybrid.mmr.model_copy(update={"enabled": False})}),
        min_score=min_score,
        max_results=len(raw),
        mtime_of=no_mtime,
        calibration=calibration,
    )
    assert {c.id for c in everything} == {c.id for c in plain}, "MMR reorders, never filters"
