"""Calibrated scores in the builtin backend: stored with the index, stable, part of its identity."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from memwell.contract.manager import MemorySearchManager
from memwell.retrieval import calibration
from memwell.retrieval.calibration import CALIBRATION_ID, Calibration
from memwell.runtime.fallback import unwrap
from memwell.testing import HashEmbeddingProvider

OpenFn = Callable[..., MemorySearchManager]
QUERIES = ("Zanzibar codename", "staging database port", "watering tomatoes")


def stored(memory: MemorySearchManager) -> dict[str, Any]:
    memory.search("warm up the reader", min_score=0.0)
    meta = unwrap(memory).files.reader_meta  # type: ignore[union-attr]
    assert meta is not None
    return dict(meta)


def scores(memory: MemorySearchManager) -> list[list[tuple[str, float]]]:
    return [
        [(h.path, h.score) for h in memory.search(q, min_score=0.0, max_results=10)]
        for q in QUERIES
    ]


def test_calibration_is_stored_and_scores_survive_a_reindex(
    open_ws: OpenFn, workspace: Path, provider: HashEmbeddingProvider
) -> None:
    memory = open_ws(workspace)
    memory.sync()
    meta = stored(memory)
    assert meta["calibration"] == CALIBRATION_ID
    calibration = Calibration.from_json(meta["calibration_params"])
    assert calibration is not None and calibration.related > calibration.unrelated
    before = scores(memory)
    generation = memory.status().custom["generation_file"]
    memory.sync(force=True)
    assert memory.status().custom["generation_file"] != generation, "a new generation"
    assert stored(memory)["calibration_params"] == meta["calibration_params"]
    assert scores(memory) == before


def test_hybrid_scores_are_the_calibrated_fused_scores(open_ws: OpenFn, workspace: Path) -> None:
    memory = open_ws(workspace)
    memory.sync()
    calibration = Calibration.from_json(stored(memory)["calibration_params"])
    assert calibration is not None
    hits = memory.search("Zanzibar codename", min_score=0.0, max_results=10)
    assert hits[0].path == "memory/2026-01-02.md"
    ranked = [h.score for h in hits]
    assert ranked == sorted(ranked, reverse=True)
    # the best hit matches both ways: far above the unrelated-text level
    assert hits[0].score > 0.9 > calibration.score(calibration.unrelated)


def test_a_new_calibration_method_rebuilds_the_index(
    open_ws: OpenFn,
    workspace: Path,
    provider: HashEmbeddingProvider,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    first = open_ws(workspace)
    first.sync()
    before = first.status().custom["generation_file"]
    first.close()
    monkeypatch.setattr(calibration, "CALIBRATION_ID", "probe-logistic-v2:test")
    calls = provider.calls
    second = open_ws(workspace)
    second.sync()
    assert second.status().custom["generation_file"] != before
    meta = stored(second)
    assert meta["calibration"] == "probe-logistic-v2:test"
    assert provider.calls > calls, "the new method measures the model again"
