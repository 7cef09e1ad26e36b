"""Date-aware matching: dates read from queries, matched to dated notes, boosting their hits."""

from __future__ import annotations

from datetime import date
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st
from memwell.contract.config import HybridSettings
from memwell.retrieval.candidate import Candidate
from memwell.retrieval.date_match import (
    DateSpan,
    _read_dates,
    asks_when,
    boost_dates,
    mentions_time,
    query_dates,
)
from memwell.retrieval.pipeline import fuse_hybrid
from memwell.runtime.factory import open_memory


def test_query_dates_reads_days_months_and_iso() -> None:
    assert query_dates("What did Ann paint on October 13, 2023?") == [DateSpan(10, 2023, 13)]
    assert query_dates("what happened on 3rd of June, 2023") == [DateSpan(6, 2023, 3)]
    assert query_dates("notes from 2024-02-29") == [DateSpan(2, 2024, 29)]
    assert query_dates("What setback did Bob face in Oct 2023?") == [DateSpan(10, 2023)]
    assert query_dates("When did Ann go camping in June?") == [DateSpan(6)]
    assert query_dates("May I ask what Ann cooked?") == [], "a bare 'May' is a verb"
    assert query_dates("what did we decide about the release?") == []
    assert query_dates("on 39 March, 2023") == [DateSpan(3, 2023)], "no such day: the month"


_DATE_PIECES = st.sampled_from(
    ["in", "of", "during", "May", "sept", "Mar.", "october", "13th", "2023", "2023-10-13", "-", "x"]
)


@given(st.lists(_DATE_PIECES, min_size=1, max_size=5).map(" ".join))
def test_the_quick_no_date_check_never_hides_a_date(query: str) -> None:
    """A query skips the date patterns only when it holds no month stem and no digit with a
    ``-``, and every pattern needs one of them: the answer is what the patterns alone read."""
    assert query_dates(query) == _read_dates(query.lower())


def test_every_month_name_passes_the_quick_check() -> None:
    names = ["january", "jan", "february", "feb", "march", "mar", "april", "apr", "may"]
    names += ["june", "jun", "july", "jul", "august", "aug", "september", "sep", "sept"]
    names += ["october", "oct", "november", "nov", "december", "dec"]
    for name in names:
        assert query_dates(f"what happened in {name.title()}"), name


def test_date_span_matches_the_day_and_the_week_after_or_the_month() -> None:
    day = DateSpan(5, 2023, 3)
    assert day.matches(date(2023, 5, 3)) and day.matches(date(2023, 5, 10))
    assert not day.matches(date(2023, 5, 2)) and not day.matches(date(2023, 5, 11))
    assert DateSpan(5, None, 3).matches(date(2021, 5, 4)), "a day without a year, any year"
    assert DateSpan(12, None, 30).matches(date(2024, 1, 2)), "the week after crosses the year"
    assert DateSpan(6).matches(date(2020, 6, 30)) and not DateSpan(6).matches(date(2020, 7, 1))
    assert not DateSpan(6, 2023).matches(date(2022, 6, 1))


def cand(path: str, score: float) -> Candidate:
    return Candidate(path, path, 1, 1, "text", score=score, vector_score=score)


def test_boost_dates_lifts_only_matching_dated_notes() -> None:
    items = [cand("memory/2023-06-03-session-2.md", 0.5), cand("memory/2023-06-20.md", 0.5),
             cand("memory/notes.md", 0.5)]  # fmt: skip
    out = boost_dates(items, "what did Ann say on 3 June, 2023?", 0.2, 0.2)
    assert [c.score for c in out] == [0.7, 0.5, 0.5]
    assert [c.score for c in boost_dates(items, "what did Ann say?", 0.2, 0.2)] == [0.5] * 3
    assert [c.score for c in boost_dates(items, "in June", 0.0, 0.2)] == [0.5] * 3


def test_when_questions_and_text_that_says_when() -> None:
    assert asks_when("When did Ann go camping?") and asks_when("how long has Bob painted?")
    assert not asks_when("What did Ann say when she left?")
    for text in ("we went yesterday", "Last Tues I joined", "two years ago", "on Friday",
                 "back in March", "since 2019", "next weekend"):  # fmt: skip
        assert mentions_time(text), text
    for text in ("I sat in the sun", "May I join?", "a lovely camping trip"):
        assert not mentions_time(text), text
    items = [Candidate("a", "memory/a.md", 1, 1, "Ann: we went camping", score=0.5),
             Candidate("b", "memory/b.md", 1, 1, "Ann: camping yesterday!", score=0.5)]  # fmt: skip
    out = boost_dates(items, "When did Ann go camping?", 0.2, 0.2)
    assert [c.score for c in out] == [0.5, 0.7]
    assert [c.score for c in boost_dates(items, "Where did Ann camp?", 0.2, 0.2)] == [0.5, 0.5]
    assert [c.score for c in boost_dates(items, "When did Ann camp?", 0.2, 0.0)] == [0.5, 0.5]


def test_text_in_another_script_never_says_when_to_an_english_question() -> None:
    # mentions_time reads English: in a Chinese paragraph it sees only a spaced year, which
    # most Chinese paragraphs lack, so it would lift a random few above the answer
    texts = ["特斯拉与莱恩和维尔合伙创办了公司。", "该教堂建于 1950 年，后来扩建。",
             "The church was built in 1950."]  # fmt: skip
    items = [Candidate(str(i), f"memory/{i}.md", 1, 1, t, score=0.5) for i, t in enumerate(texts)]
    out = boost_dates(items, "When did Tesla form a partnership?", 0.2, 0.2)
    assert [c.score for c in out] == [0.5, 0.5, 0.7]


def test_fuse_hybrid_ranks_the_named_day_first_and_zero_turns_it_off() -> None:
    vector = [cand("memory/2023-05-01.md", 0.6), cand("memory/2023-10-13.md", 0.5)]
    query = "What painting did Ann show on October 13, 2023?"

    def top(hybrid: HybridSettings) -> str:
        found = fuse_hybrid(vector, [], hybrid, min_score=0.0, max_results=5,
                            mtime_of=lambda _: None, query=query)  # fmt: skip
        return found[0].path

    assert top(HybridSettings()) == "memory/2023-10-13.md"
    assert top(HybridSettings(date_boost=0.0)) == "memory/2023-05-01.md"


def test_keyword_search_favours_the_named_day_and_the_hit_that_says_when(tmp_path: Path) -> None:
    memory = tmp_path / "memory"
    memory.mkdir()
    (memory / "2023-05-08-session-1.md").write_text(
        "Ann: I baked a lemon cake for the bake sale.\n"
        "Bob: The lemon cake sounds great, I love lemon cake.\n"
    )
    (memory / "2023-06-19-session-2.md").write_text(
        "Ann: I baked another cake yesterday.\nBob: Nice!\n"
    )
    (memory / "2023-07-02-session-3.md").write_text("Ann: I love hiking!\n")
    (memory / "2023-07-09-session-4.md").write_text(
        "Ann: We went hiking last Sunday, up the ridge.\n"
    )
    (memory / "unrelated.md").write_text("Gardening: tomatoes need sun.\n")
    overrides = {"provider": "none", "sync": {"watch": False, "on_search": False}}
    with open_memory(tmp_path, overrides=overrides) as manager:
        manager.sync(reason="test")
        query = "What cake did Ann bake on 18 June, 2023?"
        assert manager.search(query, min_score=0.0)[0].path == "memory/2023-06-19-session-2.md"
        undated = manager.search("What cake did Ann bake?", min_score=0.0)
        assert undated[0].path == "memory/2023-05-08-session-1.md", "no date: BM25 alone"
        when = manager.search("When did Ann go hiking?", min_score=0.0)
        assert when[0].path == "memory/2023-07-09-session-4.md", "the hit that says when"
