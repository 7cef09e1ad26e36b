from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from memwell.retrieval.candidate import Candidate
from memwell.retrieval.snippets import (
    citations_enabled,
    format_citation,
    to_results,
    truncate_snippet,
)


def utf16_len(text: str) -> int:
    return len(text.encode("utf-16-le")) // 2


def test_short_text_unchanged() -> None:
    assert truncate_snippet("hello") == "hello"
    assert truncate_snippet("x" * 700) == "x" * 700


def test_long_text_cut_to_700_units() -> None:
    assert truncate_snippet("x" * 1000) == "x" * 700
    assert truncate_snippet("中" * 701) == "中" * 700


def test_astral_char_not_split_at_boundary() -> None:
    assert truncate_snippet("a" * 699 + "😀" + "b") == "a" * 699
    assert truncate_snippet("a" * 698 + "😀" + "b") == "a" * 698 + "😀"


def test_astral_chars_count_two_units() -> None:
    assert truncate_snippet("😀" * 5, limit=4) == "😀" * 2
    assert truncate_snippet("abc", limit=0) == ""


texts = st.text(
    alphabet=st.sampled_from(["a", "é", "中", "😀", "𠀋", "\n", " "])
    | st.characters(exclude_categories=["Cs"]),
    max_size=60,
)


@settings(max_examples=300, deadline=None)
@given(texts, st.integers(min_value=0, max_value=70))
def test_truncation_is_safe_and_maximal(text: str, limit: int) -> None:
    out = truncate_snippet(text, limit)
    out.encode("utf-8")  # raises on a lone surrogate
    assert text.startswith(out)
    assert utf16_len(out) <= limit
    if out != text:
        assert utf16_len(text[: len(out) + 1]) > limit


@pytest.mark.parametrize(
    ("start", "end", "expected"),
    [(5, 5, "memory/a.md#L5"), (5, 9, "memory/a.md#L5-L9"), (1, 1, "memory/a.md#L1")],
)
def test_format_citation(start: int, end: int, expected: str) -> None:
    assert format_citation("memory/a.md", start, end) == expected


@pytest.mark.parametrize(
    ("key", "expected"),
    [
        (None, True),
        ("", True),
        ("agent:main:main", True),
        ("agent:main:direct:alice", True),
        ("agent:main:telegram:dm:42", True),
        ("agent:group:direct:bob", True),
        ("agent:main:group:x", False),
        ("agent:main:discord:channel:123", False),
        ("AGENT:Main:Slack:GROUP:ops", False),
        ("telegram:group:7", False),
    ],
)
def test_citations_auto_only_for_direct_chats(key: str | None, expected: bool) -> None:
    assert citations_enabled("auto", key) is expected


@pytest.mark.parametrize("key", [None, "agent:main:group:x"])
def test_citations_on_and_off_ignore_the_session(key: str | None) -> None:
    assert citations_enabled("on", key) is True
    assert citations_enabled("off", key) is False


def test_unknown_citation_mode_rejected() -> None:
    with pytest.raises(ValueError, match="citations mode"):
        citations_enabled("sometimes", None)


def cand(text: str, score: float = 0.5, start: int = 3, end: int = 7) -> Candidate:
    return Candidate(
        id="x",
        path="memory/a.md",
        start_line=start,
        end_line=end,
        text=text,
        source="sessions",
        score=score,
    )


def test_to_results_with_citations() -> None:
    [result] = to_results([cand("  hello world \n")], citations=True)
    assert result.citation == "memory/a.md#L3-L7"
    assert result.snippet == "hello world\n\nSource: memory/a.md#L3-L7"
    assert (result.path, result.start_line, result.end_line) == ("memory/a.md", 3, 7)
    assert result.source == "sessions"
    assert result.score == 0.5


def test_to_results_without_citations_keeps_raw_snippet() -> None:
    [result] = to_results([cand("  hello \n", start=4, end=4)], citations=False)
    assert result.citation is None
    assert result.snippet == "  hello \n"


def test_to_results_truncates_before_adding_citation() -> None:
    [result] = to_results([cand("y" * 900, start=2, end=2)], citations=True)
    assert result.snippet == "y" * 700 + "\n\nSource: memory/a.md#L2"


@pytest.mark.parametrize(("score", "expected"), [(1.3, 1.0), (-0.2, 0.0), (float("nan"), 0.0)])
def test_to_results_clamps_scores(score: float, expected: float) -> None:
    [result] = to_results([cand("t", score=score)], citations=False)
    assert result.score == expected


def test_to_results_keeps_order() -> None:
    items = [cand("a", score=0.2), cand("b", score=0.9)]
    assert [r.snippet for r in to_results(items, citations=False)] == ["a", "b"]
