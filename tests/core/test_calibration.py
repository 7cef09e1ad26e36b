"""Calibrated vector scores: the map's properties and the measurement on the probe set."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from memwell.contract.config import HybridSettings
from memwell.contract.embeddings import to_unit_matrix
from memwell.retrieval.calibration import CALIBRATION_ID, PROBE_PAIRS, Calibration, calibrate
from memwell.retrieval.candidate import Candidate
from memwell.retrieval.pipeline import fuse_hybrid
from memwell.testing import HashEmbeddingProvider

cosines = st.floats(min_value=-1.0, max_value=1.0, allow_nan=False)
anchors = st.tuples(
    st.floats(min_value=-0.5, max_value=0.8), st.floats(min_value=0.01, max_value=1.0)
).map(lambda pair: Calibration(unrelated=pair[0], related=pair[0] + pair[1]))


@given(anchors, cosines, cosines)
def test_score_is_monotone_and_in_unit_interval(cal: Calibration, a: float, b: float) -> None:
    low, high = sorted((a, b))
    assert 0.0 <= cal.score(low) <= cal.score(high) <= 1.0


@given(anchors)
def test_anchors_mean_the_same_for_every_model(cal: Calibration) -> None:
    # Unrelated text scores low and a typical answer high, whatever the model's cosine range.
    assert cal.score(cal.unrelated) < 0.1
    assert cal.score(cal.related) > 0.9
    assert cal.score((cal.unrelated + cal.related) / 2) == pytest.approx(0.5)


def test_strictly_increasing_between_anchors() -> None:
    cal = Calibration(unrelated=0.06, related=0.54)
    scores = [cal.score(c) for c in np.linspace(-0.2, 1.0, 200)]
    assert all(a < b for a, b in itertools.pairwise(scores))


def test_bad_anchors_are_refused() -> None:
    with pytest.raises(ValueError, match="related > unrelated"):
        Calibration(unrelated=0.5, related=0.5)
    with pytest.raises(ValueError, match="finite"):
        Calibration(unrelated=float("nan"), related=0.5)


def test_json_round_trip_and_method_check() -> None:
    cal = Calibration(unrelated=0.1, related=0.6)
    assert Calibration.from_json(cal.to_json()) == cal
    assert cal.to_json()["id"] == CALIBRATION_ID
    assert Calibration.from_json({**cal.to_json(), "id": "older-method"}) is None
    assert Calibration.from_json(None) is None
    assert Calibration.from_json({"id": CALIBRATION_ID, "unrelated": "x", "related": 1}) is None


def test_measured_on_the_probe_pairs_deterministically() -> None:
    provider = HashEmbeddingProvider()

    def embed(texts: list[str]) -> np.ndarray:
        return to_unit_matrix(provider.embed_batch(texts))

    first, second = calibrate(embed, embed), calibrate(embed, embed)
    assert first is not None and first == second
    assert first.related > first.unrelated
    # queries go through the query embedder, notes through the document embedder
    seen: list[list[str]] = []

    def recording(texts: list[str]) -> np.ndarray:
        seen.append(list(texts))
        return embed(texts)

    calibrate(recording, recording)
    assert seen == [[q for q, _ in PROBE_PAIRS], [n for _, n in PROBE_PAIRS]]


def test_a_model_without_a_scale_gets_no_calibration() -> None:
    rng = np.random.default_rng(0)
    same = to_unit_matrix(rng.normal(size=(1, 8)))

    def constant(texts: list[str]) -> np.ndarray:
        return np.repeat(same, len(texts), axis=0)

    assert calibrate(constant, constant) is None


vector_hits = st.lists(st.floats(min_value=0.0, max_value=1.0), min_size=1, max_size=12)


@given(vector_hits, vector_hits)
def test_fusion_ranking_is_kept_and_the_floor_is_strict(
    cosines: list[float], texts: list[float]
) -> None:
    vector = [
        Candidate(f"v{i}", "a.md", 1, 1, "", vector_score=c, score=c) for i, c in enumerate(cosines)
    ]
    keyword = [Candidate(f"v{i}" if i % 2 else f"k{i}", "b.md", 1, 1, "", text_score=t, score=t)
               for i, t in enumerate(texts)]  # fmt: skip
    cal = Calibration(unrelated=0.06, related=0.54)
    hybrid = HybridSettings()

    def fused(calibration: Calibration | None, floor: float) -> list[Candidate]:
        return fuse_hybrid(vector, keyword, hybrid, min_score=floor, max_results=100,
                           mtime_of=lambda path: None, calibration=calibration)  # fmt: skip

    raw, calibrated = fused(None, 0.0), fused(cal, 0.0)
    assert [c.id for c in calibrated] == [c.id for c in raw]
    for before, after in zip(raw, calibrated, strict=True):
        assert after.score == pytest.approx(cal.fused_score(before.score, 0.7))
    assert all(c.score >= 0.5 for c in fused(cal, 0.5))
    assert len(fused(cal, 0.5)) == sum(1 for c in calibrated if c.score >= 0.5)
