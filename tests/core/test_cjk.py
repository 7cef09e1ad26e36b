from __future__ import annotations

import itertools
import re
import unicodedata

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from memwell.retrieval.cjk import (
    is_cjk_char,
    segment_for_fts,
    segment_for_fts_with_grams,
    segment_for_index,
    segment_query_terms,
    split_query_token,
)

CJK_SAMPLE = "北京金银价格我爱天安门あいうカタカナー서울에서만나요々"
MIXED = st.text(alphabet=st.sampled_from(list(CJK_SAMPLE + "ab Z9_.,-\n\t\"'😀é")), max_size=40)


def _non_cjk(text: str) -> str:
    return "".join(" " if is_cjk_char(ch) else ch for ch in text)


@pytest.mark.parametrize(
    "ch",
    ["中", "㐀", "\U00020000", "\U0002a6d6", "々", "あ", "カ", "ー", "ｶ", "가", "힣", "ᄀ", "ㄱ"],
)
def test_cjk_chars(ch: str) -> None:
    assert is_cjk_char(ch)


@pytest.mark.parametrize("ch", ["a", "1", "_", " ", "。", "、", "・", "「", "😀", "é", "", "中文"])
def test_non_cjk_chars(ch: str) -> None:
    assert not is_cjk_char(ch)


def test_cjk_chars_are_word_characters() -> None:
    # Punctuation inside the CJK blocks must not count: it would leak into the index n-grams.
    word = re.compile(r"\w")
    leaked = [
        hex(cp)
        for cp in range(0x40000)
        if is_cjk_char(chr(cp))
        and not word.match(chr(cp))
        and unicodedata.category(chr(cp)) != "Cn"
    ]
    assert leaked == []


def test_segment_for_index_unigrams_then_bigrams() -> None:
    assert segment_for_index("我爱北京").split() == ["我", "爱", "北", "京", "我爱", "爱北", "北京"]


def test_segment_for_index_separates_cjk_from_adjacent_letters() -> None:
    assert segment_for_index("abc中文def").split() == ["abc", "中", "文", "中文", "def"]


def test_segment_for_index_keeps_non_cjk_text_unchanged() -> None:
    text = "Hello, world!\n  tabs\tand café_1 😀"
    assert segment_for_index(text) == text


def test_segment_for_index_no_bigram_across_a_gap() -> None:
    tokens = segment_for_index("我a好 北。京").split()
    assert "我好" not in tokens
    assert "北京" not in tokens
    assert {"我", "好", "北", "京"} <= set(tokens)


def test_segment_for_index_korean_and_japanese() -> None:
    assert "서울" in segment_for_index("서울에서").split()
    assert "タワ" in segment_for_index("東京タワー").split()


@given(MIXED)
@settings(max_examples=300, deadline=None)
def test_segment_for_index_preserves_non_cjk_characters_in_order(text: str) -> None:
    out = segment_for_index(text)
    # Only whitespace is added; every other non-CJK character survives, in order,
    # and word boundaries stay where they were.
    assert _non_cjk(out).split() == _non_cjk(text).split()
    assert [c for c in out if not is_cjk_char(c) and not c.isspace()] == [
        c for c in text if not is_cjk_char(c) and not c.isspace()
    ]


@given(MIXED)
@settings(max_examples=300, deadline=None)
def test_segment_for_index_emits_every_unigram_and_adjacent_bigram(text: str) -> None:
    tokens = set(segment_for_index(text).split())
    for a, b in itertools.pairwise(text):
        if is_cjk_char(a) and is_cjk_char(b):
            assert a + b in tokens
    assert {c for c in text if is_cjk_char(c)} <= tokens


@given(MIXED)
@settings(max_examples=300, deadline=None)
def test_query_terms_are_always_indexed_terms(text: str) -> None:
    assert set(segment_query_terms(text)) <= set(segment_for_index(text).split())


def test_segment_for_index_handles_a_megabyte() -> None:
    line = "会议记录：我们讨论了金银价格和API设计。Meeting notes, 서울에서 만나요 カタカナ\n"
    text = line * 20000
    assert len(text) >= 1_000_000
    out = segment_for_index(text)
    assert out.count("API") == 20000 and out.count("价格") == 20000


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("金银价格", ["金银", "银价", "价格"]),
        ("金", ["金"]),
        ("金 银", ["金", "银"]),
        ("a金银b价", ["金银", "价"]),
        ("abc 123", []),
        ("", []),
    ],
)
def test_segment_query_terms(text: str, expected: list[str]) -> None:
    assert segment_query_terms(text) == expected


@pytest.mark.parametrize(
    ("token", "expected"),
    [
        ("api接口v2", ["api", "接口", "v2"]),
        ("a金银b价", ["a", "金银", "b", "价"]),
        ("金银价格", ["金银", "银价", "价格"]),
        ("金", ["金"]),
        ("abc", ["abc"]),
        ("", []),
    ],
)
def test_split_query_token_keeps_the_text_between_cjk_runs(token: str, expected: list[str]) -> None:
    assert split_query_token(token) == expected


def test_segment_for_fts_bigrams_then_the_last_character() -> None:
    assert segment_for_fts("我爱北京") == " 我爱 爱北 北京 京 "
    assert segment_for_fts("a猫b") == "a  猫 b"
    assert segment_for_fts("plain text") == "plain text"


@given(MIXED)
@settings(max_examples=300, deadline=None)
def test_segment_for_fts_starts_one_token_per_cjk_occurrence(text: str) -> None:
    """A prefix query for a character counts each of its occurrences once, as the unigram of
    segment_for_index did; the bigrams are the same; the text between runs is kept."""
    fts_tokens = segment_for_fts(text).split()
    full_tokens = segment_for_index(text).split()
    for ch in {c for c in text if is_cjk_char(c)}:
        assert sum(t.startswith(ch) for t in fts_tokens) == full_tokens.count(ch)
    assert [t for t in fts_tokens if len(t) == 2 and all(map(is_cjk_char, t))] == [
        t for t in full_tokens if len(t) == 2 and all(map(is_cjk_char, t))
    ]
    assert _non_cjk(segment_for_fts(text)).split() == _non_cjk(text).split()


# U+FADA and U+D7FC are unassigned code points inside CJK blocks: no word characters.
_WITH_UNASSIGNED = st.text(
    alphabet=st.sampled_from(list(CJK_SAMPLE + "ab Z9_.\n\ufada\ud7fc")), max_size=40
)


@given(_WITH_UNASSIGNED)
@settings(max_examples=300, deadline=None)
def test_segment_for_fts_with_grams_gives_the_fts_text_and_the_words_n_grams(text: str) -> None:
    """The text is segment_for_fts's; the n-grams are the CJK unigrams and bigrams of the text's
    words, each word segmented as the index segments it (an unassigned code point ends a word,
    and so a run)."""
    fts_text, grams = segment_for_fts_with_grams(text)
    assert fts_text == segment_for_fts(text)
    assert grams == {
        term
        for word in re.findall(r"\w+", text)
        for term in re.findall(r"\w+", segment_for_index(word))
        if all(map(is_cjk_char, term))
    }


def test_other_script_tells_a_question_from_a_note_in_another_language() -> None:
    from memwell.retrieval.cjk import cjk_share, other_script

    assert other_script("Which port does staging use?", "预发布环境的数据库改为监听 6432 端口。")
    assert other_script("番茄多久浇一次水？", "Tomatoes need watering every morning.")
    assert not other_script("which port", "The staging database listens on 6432.")
    assert not other_script("黑豹队的防守丢了多少分？", "黑豹队的防守只丢了 308分 (NFL)")
    # a query mixing both scripts, and digits alone, decide nothing
    assert not other_script("黑豹 NFL defense stats", "黑豹队的防守只丢了 308分")
    assert not other_script("黑豹 NFL defense stats", "The Panthers defense gave up 308 points")
    assert not other_script("2026", "预发布环境")
    # shares count reading units (a CJK character, a word of other letters), not letters: a
    # Chinese paragraph naming English terms is Chinese text, not half English
    assert cjk_share("308 分 NFL") == 1 / 2 and cjk_share("12, 34!") == 0.0
    anthem = "超级碗 50 的国歌由 Lady Gaga 演唱，Marlee Matlin 用美国手语 (ASL) 同步翻译。"
    assert cjk_share(anthem) > 0.7
    assert other_script("Who sang the National Anthem at Super Bowl 50?", anthem)
