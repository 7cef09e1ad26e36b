from __future__ import annotations

from memwell.config import HybridSettings
from memwell.retrieval.candidate import Candidate
from memwell.retrieval.pipeline import fuse_hybrid, keyword_floor, rank_candidates


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
