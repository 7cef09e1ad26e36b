from __future__ import annotations

import re
from itertools import pairwise

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from memwell.retrieval.candidate import Candidate
from memwell.retrieval.mmr import jaccard, mmr_rerank, mmr_tokens


def item(cid: str, score: float, text: str) -> Candidate:
    return Candidate(
        id=cid,
        path=f"memory/{cid}.md",
        start_line=3,
        end_line=4,
        text=text,
        source="sessions",
        vector_score=0.25,
        text_score=0.5,
        score=score,
    )


def ids(items: list[Candidate]) -> list[str]:
    return [c.id for c in items]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Hello World foo_bar 42", {"hello", "world", "foo_bar", "42"}),
        ("re-ranking, fast!", {"re", "ranking", "fast"}),
        ("我喜欢", {"我", "喜", "欢", "我喜", "喜欢"}),
        ("我a好", {"我", "a", "好"}),
        ("API设计", {"api", "设", "计", "设计"}),
        ("すし", {"す", "し", "すし"}),
        ("カナ", {"カ", "ナ", "カナ"}),
        ("한국어", {"한", "국", "어", "한국", "국어"}),
        ("", set()),
        ("…!?", set()),
    ],
)
def test_mmr_tokens(text: str, expected: set[str]) -> None:
    assert mmr_tokens(text) == frozenset(expected)


def test_mmr_tokens_no_bigram_across_space() -> None:
    assert "我好" not in mmr_tokens("我 好")


@pytest.mark.parametrize(
    ("a", "b", "expected"),
    [
        (set(), set(), 1.0),
        ({"a"}, set(), 0.0),
        (set(), {"a"}, 0.0),
        ({"a", "b"}, {"a", "b"}, 1.0),
        ({"a"}, {"b"}, 0.0),
        ({"a", "b", "c"}, {"b", "c", "d"}, 0.5),
    ],
)
def test_jaccard_cases(a: set[str], b: set[str], expected: float) -> None:
    assert jaccard(a, b) == pytest.approx(expected)


words = st.frozensets(st.sampled_from(["a", "b", "c", "d", "e"]))


@settings(max_examples=200, deadline=None)
@given(words, words)
def test_jaccard_symmetric_and_bounded(a: frozenset[str], b: frozenset[str]) -> None:
    assert jaccard(a, b) == jaccard(b, a)
    assert 0.0 <= jaccard(a, b) <= 1.0


def test_lambda_one_is_pure_relevance_sort() -> None:
    items = [item("a", 0.5, "same"), item("b", 0.9, "same"), item("c", 0.7, "same")]
    assert ids(mmr_rerank(items, lambda_=1.0)) == ["b", "c", "a"]


def test_lambda_zero_maximises_diversity() -> None:
    items = [
        item("a", 1.0, "apple banana"),
        item("b", 0.9, "apple banana"),
        item("c", 0.5, "cherry date"),
    ]
    assert ids(mmr_rerank(items, lambda_=0.0)) == ["a", "c", "b"]


def test_default_lambda_demotes_near_duplicates() -> None:
    items = [
        item("a", 1.0, "apple banana cherry"),
        item("b", 0.95, "apple banana cherry"),
        item("c", 0.9, "dog elephant fox"),
        item("d", 0.0, "zebra"),
    ]
    assert ids(mmr_rerank(items)) == ["a", "c", "b", "d"]


@pytest.mark.parametrize(("raw", "clamped"), [(5.0, 1.0), (-1.0, 0.0)])
def test_lambda_is_clamped(raw: float, clamped: float) -> None:
    items = [
        item("a", 1.0, "apple banana"),
        item("b", 0.9, "apple banana"),
        item("c", 0.5, "cherry date"),
    ]
    assert ids(mmr_rerank(items, lambda_=raw)) == ids(mmr_rerank(items, lambda_=clamped))
    assert ids(mmr_rerank(items, lambda_=raw)) != ids(mmr_rerank(items, lambda_=1.0 - clamped))


def test_identical_content_keeps_relevance_order() -> None:
    items = [item("a", 0.2, "same text"), item("b", 0.8, "same text"), item("c", 0.5, "same text")]
    assert ids(mmr_rerank(items)) == ["b", "c", "a"]


def test_ties_prefer_higher_original_score() -> None:
    items = [item("low", 0.2, "x"), item("high", 0.9, "y")]
    assert ids(mmr_rerank(items, lambda_=0.0)) == ["high", "low"]


def test_ties_then_prefer_input_order() -> None:
    items = [item("first", 0.5, "x"), item("second", 0.5, "y"), item("third", 0.5, "z")]
    assert ids(mmr_rerank(items)) == ["first", "second", "third"]


def test_negative_scores_are_normalised() -> None:
    items = [item("a", -0.5, "one"), item("b", -0.1, "two"), item("c", -0.9, "three")]
    assert ids(mmr_rerank(items)) == ["b", "a", "c"]


def test_all_fields_preserved() -> None:
    items = [item("a", 0.3, "apple"), item("b", 0.9, "banana")]
    snapshot = [Candidate(**vars(c)) for c in items]
    out = mmr_rerank(items)
    assert sorted(ids(out)) == ["a", "b"]
    for result in out:
        assert result == next(s for s in snapshot if s.id == result.id)
    assert items == snapshot


@pytest.mark.parametrize("count", [0, 1])
def test_zero_or_one_item_returns_a_copy(count: int) -> None:
    items = [item("a", 0.4, "x")][:count]
    out = mmr_rerank(items)
    assert out == items
    assert out is not items


@settings(max_examples=100, deadline=None)
@given(
    st.lists(
        st.tuples(st.floats(-2, 2), st.sampled_from(["a b", "b c", "c d", "我们", "x"])),
        max_size=12,
    ),
    st.floats(0, 1),
)
def test_mmr_is_a_permutation(raw: list[tuple[float, str]], lambda_: float) -> None:
    items = [item(str(i), score, text) for i, (score, text) in enumerate(raw)]
    out = mmr_rerank(items, lambda_=lambda_)
    assert sorted(ids(out), key=int) == ids(items)
    if items:
        assert out[0].score == max(c.score for c in items)


def eager_mmr(items: list[Candidate], lambda_: float) -> list[str]:
    """The textbook greedy MMR, every unpicked item scored at every step: the oracle."""
    relevance = (
        [1.0] * len(items)
        if max(c.score for c in items) == min(c.score for c in items)
        else [
            (c.score - min(x.score for x in items))
            / (max(x.score for x in items) - min(x.score for x in items))
            for c in items
        ]
    )
    remaining, picked = list(range(len(items))), []
    while remaining:

        def key(i: int) -> tuple[float, float, int]:
            sim = max(
                (jaccard(mmr_tokens(items[i].text), mmr_tokens(items[j].text)) for j in picked),
                default=0.0,
            )
            return (lambda_ * relevance[i] - (1 - lambda_) * sim, items[i].score, -i)

        best = max(remaining, key=key)
        remaining.remove(best)
        picked.append(best)
    return [items[i].id for i in picked]


texts = st.lists(st.sampled_from(["apple", "banana", "cherry", "date", "我们", "喜欢"]), max_size=4)


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.tuples(st.one_of(st.floats(-2, 2), st.sampled_from([0.0, 0.5, 1.0])), texts),
        min_size=1,
        max_size=14,
    ),
    st.one_of(st.floats(0, 1), st.sampled_from([0.0, 0.7, 0.85, 1.0])),
)
def test_pruned_lazy_order_equals_the_eager_greedy_order(
    raw: list[tuple[float, list[str]]], lambda_: float
) -> None:
    items = [item(str(i), score, " ".join(words)) for i, (score, words) in enumerate(raw)]
    assert ids(mmr_rerank(items, lambda_=lambda_)) == eager_mmr(items, lambda_)


def test_a_consumer_that_stops_early_tokenizes_only_the_top(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import memwell.retrieval.mmr as mmr

    seen: list[str] = []
    real = mmr.mmr_tokens
    monkeypatch.setattr(mmr, "mmr_tokens", lambda text: seen.append(text) or real(text))
    items = [item(str(i), 1.0 - i / 200, f"word{i} shared") for i in range(200)]
    order = mmr.mmr_order(items, lambda_=0.85)
    first = [next(order).id for _ in range(6)]
    assert first == ["0", "1", "2", "3", "4", "5"]
    assert len(seen) < 20


def _is_cjk(char: str) -> bool:
    ranges = [(0x3040, 0x309F), (0x30A0, 0x30FF), (0x3400, 0x4DBF), (0x4E00, 0x9FFF)]
    ranges += [(0xAC00, 0xD7AF), (0x1100, 0x11FF)]
    return any(lo <= ord(char) <= hi for lo, hi in ranges)


@settings(max_examples=300, deadline=None)
@given(
    st.text(alphabet=st.sampled_from("aZ9_ -.!\n我们喜欢すしカナ한국ßİ\u30ff\u3040\u11ff\u1200"))
)
def test_mmr_tokens_match_the_char_by_char_definition(text: str) -> None:
    lower = text.lower()
    expected = set(re.findall(r"[a-z0-9_]+", lower))
    expected |= {c for c in lower if _is_cjk(c)}
    expected |= {a + b for a, b in pairwise(lower) if _is_cjk(a) and _is_cjk(b)}
    assert mmr_tokens(text) == frozenset(expected)
