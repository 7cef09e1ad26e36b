from __future__ import annotations

import numpy as np
import pytest
from memwell.retrieval.candidate import Candidate
from memwell.retrieval.file_similarity import blend_file_similarity, mean_vector


def cand(cid: str, path: str, cosine: float) -> Candidate:
    return Candidate(cid, path, 1, 1, f"text {cid}", vector_score=cosine, score=cosine)


def test_a_chunk_of_a_relevant_file_overtakes_a_lone_near_chunk() -> None:
    # "a2" is a little less near than "b1", but its file as a whole is much nearer.
    hits = [cand("b1", "memory/b.md", 0.50), cand("a2", "memory/a.md", 0.45)]
    files = {("memory/a.md", "memory"): 0.60, ("memory/b.md", "memory"): 0.20}
    out = blend_file_similarity(hits, files, 0.7)
    assert [c.id for c in out] == ["a2", "b1"]
    assert out[0].vector_score == pytest.approx(0.3 * 0.45 + 0.7 * 0.60)
    assert out[0].score == out[0].vector_score
    assert out[1].vector_score == pytest.approx(0.3 * 0.50 + 0.7 * 0.20)
    assert [c.vector_score for c in hits] == [0.50, 0.45], "inputs are left alone"


def test_weight_zero_or_unknown_file_keeps_the_chunk_cosine() -> None:
    hits = [cand("a", "memory/a.md", 0.4), cand("b", "memory/b.md", 0.3)]
    assert [c.vector_score for c in blend_file_similarity(hits, {}, 0.7)] == [0.4, 0.3]
    files = {("memory/a.md", "memory"): 0.0, ("memory/b.md", "memory"): 1.0}
    assert [c.vector_score for c in blend_file_similarity(hits, files, 0.0)] == [0.4, 0.3]


def test_mean_vector_is_the_normalised_sum_and_one_chunk_is_itself() -> None:
    rows = np.array([[1.0, 0.0], [0.0, 1.0]], dtype=np.float32)
    mean = mean_vector(rows)
    assert mean is not None
    assert mean == pytest.approx(np.array([2**-0.5, 2**-0.5]))
    single = mean_vector(rows[:1])
    assert single is not None and single == pytest.approx(rows[0])
    assert mean_vector(np.array([[1.0, 0.0], [-1.0, 0.0]], dtype=np.float32)) is None
