"""Calibrated vector scores: the map's properties and the measurement on the probe set."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from memwell.contract.config import HybridSettings
from memwell.contract.embeddings import to_unit_matrix
from memwell.retrieval.calibration import (
    CALIBRATION_ID,
    PROBE_PAIRS,
    TRANSLATED_PROBES,
    Calibration,
    calibrate,
)
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


# -- across scripts (Calibration.align) ---------------------------------------------------------

SAME, CROSS = (0.74, 0.83), (0.73, 0.80)
ENGLISH_REF, CHINESE_REF = (1.0, 0.0, 0.0), (0.0, 1.0, 0.0)


def multilingual(baseline: float = 0.5) -> Calibration:
    return Calibration(*SAME, CROSS, ("zh",), (ENGLISH_REF, CHINESE_REF), baseline)


def hit(name: str, text: str, cosine: float) -> Candidate:
    return Candidate(name, f"{name}.md", 1, 1, text, vector_score=cosine, score=cosine)


@given(cosines, cosines)
def test_aligned_is_increasing_and_maps_cross_anchors_onto_the_same_script_ones(
    a: float, b: float
) -> None:
    cal = multilingual()
    low, high = sorted((a, b))
    assert -1.0 <= cal.aligned(low) <= cal.aligned(high) <= 1.0
    assert cal.aligned(CROSS[0]) == pytest.approx(SAME[0])
    assert cal.aligned(CROSS[1]) == pytest.approx(SAME[1])
    assert cal.aligned(-1.0) == pytest.approx(-1.0) and cal.aligned(1.0) == pytest.approx(1.0)


def test_align_moves_only_hits_in_the_other_script_and_reranks() -> None:
    cal = multilingual()
    english = hit("en", "The staging database listens on port 5433.", 0.78)
    chinese = hit("zh", "预发布环境的数据库监听 5433 端口。", 0.77)
    aligned = cal.align([english, chinese], "which port does the staging database use?")
    # the Chinese answer's 0.77 is above the cross-script midpoint: it now ranks first
    assert [c.id for c in aligned] == ["zh", "en"]
    assert aligned[0].vector_score == aligned[0].score == pytest.approx(cal.aligned(0.77))
    assert aligned[1] == english
    # a Chinese question moves the English note instead
    back = cal.align([english, chinese], "预发布数据库用哪个端口？")
    assert {c.id: c.vector_score for c in back} == pytest.approx(
        {"en": cal.aligned(0.78), "zh": 0.77}
    )


def test_align_corrects_by_the_querys_distance_to_the_hits_script() -> None:
    cal = multilingual(baseline=0.5)
    chinese = hit("zh", "预发布环境的数据库监听 5433 端口。", 0.76)
    english_question = "which port does the staging database use?"
    # a query as far from Chinese notes as the probe questions are: plain alignment
    typical = np.array([0.0, 0.5, 0.866], dtype=np.float32)
    assert cal.offset(english_question, typical) == pytest.approx(0.0, abs=1e-6)
    (plain,) = cal.align([chinese], english_question, typical)
    assert plain.vector_score == pytest.approx(cal.aligned(0.76), abs=1e-6)
    # a query further from every Chinese note (0.2 below the probes): its cosine counts more
    far = np.array([0.0, 0.3, 0.954], dtype=np.float32)
    assert cal.offset(english_question, far) == pytest.approx(-0.2, abs=1e-6)
    (lifted,) = cal.align([chinese], english_question, far)
    assert lifted.vector_score == pytest.approx(cal.aligned(0.96), abs=1e-6)
    # a Chinese question is measured against the English reference
    assert cal.offset("预发布数据库用哪个端口？", far) == pytest.approx(-0.5, abs=1e-6)
    # without the query's vector (a backend that does not pass it) the offset is 0
    assert cal.offset(english_question, None) == 0.0


def test_align_without_cross_anchors_returns_the_hits_as_they_are() -> None:
    cal = Calibration(*SAME)
    hits = [hit("zh", "预发布环境的数据库监听 5433 端口。", 0.5), hit("en", "port 5433", 0.7)]
    assert cal.align(hits, "which port?", np.ones(3, dtype=np.float32)) == hits
    assert cal.aligned(0.42) == 0.42


def test_cross_calibration_round_trips_and_is_checked() -> None:
    cal = multilingual(baseline=0.61)
    data = cal.to_json()
    assert data["id"].startswith("probe-logistic-cross-v2:") and data["baseline"] == 0.61
    assert Calibration.from_json(data) == cal
    assert Calibration.from_json({**data, "id": data["id"].replace("v2", "v1")}) is None
    assert Calibration.from_json({k: v for k, v in data.items() if k != "references"}) is None
    with pytest.raises(ValueError, match="languages and references"):
        Calibration(*SAME, CROSS, ("zh",))
    with pytest.raises(ValueError, match="same dimensions"):
        Calibration(*SAME, CROSS, ("zh",), (ENGLISH_REF, (1.0, 0.0)))


def test_a_language_agnostic_model_measures_the_same_scale_across_scripts() -> None:
    # a model that embeds a translation exactly like its original: cross == same, offset 0
    translated = dict(zip(TRANSLATED_PROBES["zh"], PROBE_PAIRS, strict=True))
    originals = {text: en for pair in translated.items() for text, en in zip(*pair, strict=True)}
    provider = HashEmbeddingProvider()

    def embed(texts: list[str]) -> np.ndarray:
        return to_unit_matrix(provider.embed_batch([originals.get(t, t) for t in texts]))

    cal = calibrate(embed, embed, ("zh",))
    assert cal is not None and cal.cross == pytest.approx((cal.unrelated, cal.related))
    assert cal.references is not None and cal.references[0] == cal.references[1]
    questions = embed([q for q, _ in PROBE_PAIRS])
    offsets = [cal.offset(q, v) for (q, _), v in zip(PROBE_PAIRS, questions, strict=True)]
    assert np.mean(offsets) == pytest.approx(0.0, abs=1e-5)
    assert calibrate(embed, embed) == Calibration(cal.unrelated, cal.related)
