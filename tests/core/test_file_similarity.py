from __future__ import annotations

import numpy as np
import pytest
from memwell.retrieval.candidate import Candidate
from memwell.retrieval.file_similarity import (
    FileMean,
    blend_file_similarity,
    file_blend_weight,
    file_mean,
)

A = ("memory/a.md", "memory")
B = ("memory/b.md", "memory")


def cand(cid: str, path: str, cosine: float) -> Candidate:
    return Candidate(cid, path, 1, 1, f"text {cid}", vector_score=cosine, score=cosine)


def test_a_chunk_of_a_relevant_file_overtakes_a_lone_near_chunk() -> None:
    # "a2" is a little less near than "b1", but its file as a whole is much nearer.
    hits = [cand("b1", "memory/b.md", 0.50), cand("a2", "memory/a.md", 0.45)]
    files = {A: 0.60, B: 0.20}
    out = blend_file_similarity(hits, files, {A: 0.7, B: 0.7})
    assert [c.id for c in out] == ["a2", "b1"]
    assert out[0].vector_score == pytest.approx(0.3 * 0.45 + 0.7 * 0.60)
    assert out[0].score == out[0].vector_score
    assert out[1].vector_score == pytest.approx(0.3 * 0.50 + 0.7 * 0.20)
    assert [c.vector_score for c in hits] == [0.50, 0.45], "inputs are left alone"


def test_each_file_blends_with_its_own_weight() -> None:
    hits = [cand("b1", "memory/b.md", 0.50), cand("a2", "memory/a.md", 0.45)]
    out = blend_file_similarity(hits, {A: 0.60, B: 0.20}, {A: 0.5, B: 0.0})
    assert [(c.id, round(c.vector_score, 6)) for c in out] == [("a2", 0.525), ("b1", 0.5)]


def test_weight_zero_or_unknown_file_keeps_the_chunk_cosine() -> None:
    hits = [cand("a", "memory/a.md", 0.4), cand("b", "memory/b.md", 0.3)]
    assert [c.vector_score for c in blend_file_similarity(hits, {}, {A: 0.7})] == [0.4, 0.3]
    files = {A: 0.0, B: 1.0}
    assert [c.vector_score for c in blend_file_similarity(hits, files, {})] == [0.4, 0.3]
    zero = {A: 0.0, B: 0.0}
    assert [c.vector_score for c in blend_file_similarity(hits, files, zero)] == [0.4, 0.3]


def test_file_mean_is_the_normalised_sum_with_its_coherence() -> None:
    rows = np.array([[1.0, 0.0], [0.0, 1.0]], dtype=np.float32)
    mean = file_mean(rows)
    assert mean is not None
    assert mean.vector == pytest.approx(np.array([2**-0.5, 2**-0.5]))
    assert mean.coherence == pytest.approx(2**-0.5)  # two orthogonal topics
    single = file_mean(rows[:1])
    assert single is not None and single.vector == pytest.approx(rows[0])
    assert single.coherence == pytest.approx(1.0)
    assert file_mean(np.array([[1.0, 0.0], [-1.0, 0.0]], dtype=np.float32)) is None


def test_the_blend_weight_grows_from_the_coherence_floor_to_file_weight() -> None:
    vector = np.array([1.0, 0.0], dtype=np.float32)
    weight = [file_blend_weight(0.8, 0.6, FileMean(vector, c)) for c in (0.5, 0.6, 0.8, 1.0)]
    assert weight == pytest.approx([0.0, 0.0, 0.4, 0.8])
    assert file_blend_weight(0.8, 0.0, FileMean(vector, 0.5)) == pytest.approx(0.4)
