"""Promotion ranks by the decay scores ``memwell reflect`` wrote (memory/meta/decay-scores.json)."""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path

from memwell.contract.config import PromotionSettings
from memwell.curation.decay_file import (
    SCORES_PATH,
    DecayScores,
    FileScore,
    encode,
    file_relevance,
)
from memwell.curation.promotion import FILE_RELEVANCE_WEIGHT, rank_candidates
from memwell.curation.tracking import RecallEntry

NOW = datetime(2026, 12, 4, 9, 0, tzinfo=timezone.utc)
PATHS = ("memory/2026-11-01.md", "memory/2026-11-02.md")


def entry(path: str) -> RecallEntry:
    return RecallEntry(
        key=f"{path}:1-3",
        path=path,
        start_line=1,
        end_line=3,
        source="memory",
        snippet="Ines Duarte leads Atlas.",
        recall_count=5,
        total_score=4.5,
        max_score=0.95,
        last_recalled_at="2026-12-03T09:00:00+00:00",
        query_hashes=["a", "b", "c"],
        recall_days=["2026-11-30", "2026-12-02", "2026-12-03"],
    )


def score(relevance: float) -> FileScore:
    return FileScore(
        age_days=30,
        pinned=False,
        evergreen=False,
        recall_count=5,
        last_recall=None,
        tokens_injected=0,
        relevance=relevance,
    )


def write_scores(ws: Path, data: bytes) -> None:
    (ws / SCORES_PATH).parent.mkdir(parents=True)
    (ws / SCORES_PATH).write_bytes(data)


def ranked(ws: Path) -> list[str]:
    settings = PromotionSettings(min_score=0.0)
    entries = [entry(p) for p in PATHS]
    return [c.path for c in rank_candidates(entries, settings, NOW, relevance=file_relevance(ws))]


def test_of_two_equal_candidates_the_more_relevant_file_ranks_first(tmp_path: Path) -> None:
    assert ranked(tmp_path) == list(PATHS)  # no scores: the path breaks the tie
    files = {PATHS[0]: score(0.2), PATHS[1]: score(0.9)}
    write_scores(tmp_path, encode(DecayScores(as_of="2026-12-04", half_life_days=30, files=files)))
    assert file_relevance(tmp_path) == {PATHS[0]: 0.2, PATHS[1]: 0.9}
    assert ranked(tmp_path) == [PATHS[1], PATHS[0]]


def test_the_weight_is_bounded_and_an_unscored_file_counts_as_new() -> None:
    settings = PromotionSettings(min_score=0.0)
    strong = entry(PATHS[0])
    weak = entry(PATHS[1])
    weak.total_score = 3.5  # a lower score than the decay weight can make up for
    out = rank_candidates([weak, strong], settings, NOW, relevance={PATHS[1]: 1.0})
    assert [c.path for c in out] == [PATHS[0], PATHS[1]]
    assert out[0].score - out[1].score > FILE_RELEVANCE_WEIGHT
    weak.total_score = 4.45  # now the weak one's file (1.0) beats the unscored one's 0.5
    out = rank_candidates([strong, weak], settings, NOW, relevance={PATHS[1]: 1.0})
    assert 0 < out[1].score - out[0].score < FILE_RELEVANCE_WEIGHT / 2
    assert [c.path for c in out] == [PATHS[1], PATHS[0]]


def test_a_broken_or_missing_scores_file_changes_nothing(tmp_path: Path) -> None:
    write_scores(tmp_path, b'{"files": {"memory/2026-11-02.md": ')
    assert file_relevance(tmp_path) == {}
    assert ranked(tmp_path) == list(PATHS)
    (tmp_path / SCORES_PATH).write_bytes(b'{"as_of": 3}')
    assert ranked(tmp_path) == list(PATHS)
