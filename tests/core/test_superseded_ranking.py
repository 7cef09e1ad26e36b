"""Superseded facts rank below their successors (memwell.retrieval.superseded)."""

from __future__ import annotations

from memwell.retrieval.candidate import Candidate
from memwell.retrieval.superseded import SUPERSEDED_FACTOR, demote_superseded

MARK = " *(superseded 2026-06-03 by memory/2026-06-03.md#L3)*"
OLD = Candidate(
    "old", "memory/2026-03-02.md", 1, 3, f"# x\n\n- Staging DB on port 5432.{MARK}", score=0.9
)
NEW = Candidate(
    "new", "memory/2026-06-03.md", 1, 4, "# y\n\n- Staging DB on port 6432.\n", score=0.5
)
OTHER = Candidate("other", "memory/a.md", 1, 1, "Staging DB backups nightly.", score=0.7)


def test_the_successor_comes_first_whatever_the_scores() -> None:
    ranked = demote_superseded([OLD, OTHER, NEW], "staging db port")
    assert [c.id for c in ranked] == ["other", "new", "old"]
    assert ranked[2].score <= ranked[1].score


def test_without_the_successor_the_old_chunk_is_only_demoted() -> None:
    ranked = demote_superseded([OLD, OTHER], "staging db port")
    assert [c.id for c in ranked] == ["other", "old"]
    assert ranked[1].score == OLD.score * SUPERSEDED_FACTOR


def test_history_questions_and_current_matches_are_left_alone() -> None:
    assert demote_superseded([OLD, NEW], "what port did staging db use before?") == [OLD, NEW]
    mixed = Candidate(
        "mixed",
        OLD.path,
        1,
        4,
        f"{OLD.text}\nStaging DB backups run nightly on port 9000.",
        score=0.9,
    )
    assert demote_superseded([mixed, NEW], "staging db backups") == [mixed, NEW]


def test_unmarked_candidates_are_untouched() -> None:
    items = [OTHER, NEW]
    assert demote_superseded(items, "staging db port") == items
