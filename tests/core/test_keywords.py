from __future__ import annotations

import unicodedata
from collections.abc import Iterator

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from memwell.retrieval.keywords import TOKEN_RE, extract_keywords, iter_keywords, tokenize
from memwell.retrieval.stopwords import (
    ALL_STOPWORDS,
    STOPWORDS_AR,
    STOPWORDS_EN,
    STOPWORDS_ES,
    STOPWORDS_JA,
    STOPWORDS_KO,
    STOPWORDS_PT,
    STOPWORDS_ZH,
)

ALL_LISTS = [
    STOPWORDS_EN,
    STOPWORDS_ES,
    STOPWORDS_PT,
    STOPWORDS_AR,
    STOPWORDS_ZH,
    STOPWORDS_KO,
    STOPWORDS_JA,
]


def test_token_re_is_letters_numbers_underscore() -> None:
    for cp in range(0x30000):
        ch = chr(cp)
        expected = unicodedata.category(ch)[0] in "LN" or ch == "_"
        assert (TOKEN_RE.fullmatch(ch) is not None) == expected, hex(cp)


def test_tokenize_lowercases_and_splits_on_punctuation() -> None:
    assert tokenize("FOO_bar baz-1") == ["foo_bar", "baz", "1"]
    assert tokenize('NEAR("x" y)*') == ["near", "x", "y"]
    assert tokenize("北京，Straße") == ["北京", "straße"]
    assert tokenize("  ,.; ") == []
    assert tokenize("NAI\u0308VE cafe\u0301") == ["naïve", "café"]


def test_stopword_lists_are_lowercase_and_nonempty() -> None:
    for words in ALL_LISTS:
        assert words
        assert all(w == w.lower() and w.strip() == w and w for w in words)
    assert frozenset().union(*ALL_LISTS) == ALL_STOPWORDS


def test_english_stopwords_cover_required_categories() -> None:
    articles_pronouns = {"a", "an", "the", "i", "me", "you", "we", "they", "it"}
    auxiliaries = {"is", "are", "was", "be", "have", "do", "will", "can"}
    prepositions_conjunctions = {"in", "on", "at", "of", "with", "from", "about", "and", "or"}
    spec_extras = {"yesterday", "today", "tomorrow", "earlier", "later", "recently", "ago"}
    spec_extras |= {"just", "now", "thing", "things", "stuff", "something", "anything"}
    spec_extras |= {"everything", "nothing", "please", "help", "find", "show", "get", "tell"}
    spec_extras |= {"give"}
    for group in (articles_pronouns, auxiliaries, prepositions_conjunctions, spec_extras):
        assert group <= STOPWORDS_EN


def test_english_example_from_spec() -> None:
    assert extract_keywords("that thing we discussed about the API") == ["discussed", "api"]


def test_english_drops_short_words_numbers_and_symbols() -> None:
    assert extract_keywords("db 2024 +++ 😀 c++ deploy") == ["c++", "deploy"]


def test_chinese_unigrams_and_bigrams_without_stopwords() -> None:
    keywords = extract_keywords("之前讨论的那个方案")
    assert {"讨论", "方案", "讨", "论"} <= set(keywords)
    assert not {"之前", "的", "那个"} & set(keywords)
    assert keywords.index("讨") < keywords.index("讨论")


def test_chinese_trigram_mode_keeps_whole_block() -> None:
    assert extract_keywords("金银价格，走势", trigram=True) == ["金银价格", "走势"]


def test_chinese_mixed_with_ascii_keeps_both() -> None:
    assert extract_keywords("api接口") == ["api", "接", "口", "接口"]
    assert extract_keywords("api接口", trigram=True) == ["api", "接口"]


def test_korean_particles_and_stems() -> None:
    keywords = extract_keywords("API를 논의했던 회의록을 찾아줘")
    assert keywords == ["api를", "api", "논의했던", "회의록을", "회의록", "찾아줘"]


def test_korean_inflected_stopword_dropped() -> None:
    # "우리가" is the stop word "우리" plus a particle.
    assert extract_keywords("우리가 논의") == ["논의"]


def test_korean_no_one_syllable_stem() -> None:
    # "논의" ends with the particle "의", but "논" is not a useful stem.
    assert extract_keywords("논의") == ["논의"]


def test_korean_longest_particle_first() -> None:
    # "에서" must win over "서" (not a particle) / shorter matches.
    assert extract_keywords("서울에서") == ["서울에서", "서울"]


def test_japanese_script_parts() -> None:
    keywords = extract_keywords("昨日のバグについて")
    assert keywords == ["バグ"]
    assert extract_keywords("東京タワーの写真") == ["東京", "タワー", "写真"]


def test_japanese_kanji_bigrams_unless_trigram() -> None:
    assert extract_keywords("データベース設計書") == ["データベース", "設計書", "設計", "計書"]
    assert extract_keywords("データベース設計書", trigram=True) == ["データベース", "設計書"]


def test_spanish() -> None:
    query = "¿Qué decidimos sobre la base de datos ayer?"
    assert extract_keywords(query) == ["decidimos", "base", "datos"]


def test_portuguese() -> None:
    query = "O que decidimos sobre o banco de dados ontem?"
    assert extract_keywords(query) == ["decidimos", "banco", "dados"]


def test_arabic() -> None:
    assert extract_keywords("ماذا قررنا في الاجتماع") == ["قررنا", "الاجتماع"]


@pytest.mark.parametrize("query", ["", "   ", "the a of", "我 的", "?!", "은 는"])
def test_empty_and_stopword_only_give_nothing(query: str) -> None:
    assert extract_keywords(query) == []


def test_deduplicates_preserving_order() -> None:
    assert extract_keywords("Deploy API deploy api DEPLOY") == ["deploy", "api"]


@given(st.text(max_size=60))
@settings(max_examples=200, deadline=None)
def test_keywords_are_unique_and_never_filtered_tokens(query: str) -> None:
    keywords = extract_keywords(query)
    assert len(keywords) == len(set(keywords))
    for keyword in keywords:
        assert keyword not in ALL_STOPWORDS
        assert not keyword.isdigit()
        assert not (keyword.isascii() and keyword.isalpha() and len(keyword) < 3)
        assert keyword == keyword.lower()


def _whole_text_keywords(text: str) -> list[str]:
    """The keywords segmenting the whole text at once: punctuation to spaces, then split."""
    from memwell.retrieval.keywords import _is_valid_keyword, _segment_tokens

    spaced = "".join(" " if unicodedata.category(ch)[0] == "P" else ch for ch in text.lower())
    tokens = (tok for seg in spaced.split() for tok in _segment_tokens(seg, False))
    return list(dict.fromkeys(t for t in tokens if t not in ALL_STOPWORDS and _is_valid_keyword(t)))


@given(st.text(alphabet="ab ,.-_!\t\n\u3000\u3001服务监听端口の話をした논의를Déjà", max_size=80))
@settings(max_examples=300, deadline=None)
def test_word_by_word_segmentation_gives_the_whole_texts_keywords(text: str) -> None:
    assert extract_keywords(text) == _whole_text_keywords(text)
    assert list(iter_keywords(text)) == extract_keywords(text)


def test_iter_keywords_segments_no_more_than_the_keywords_taken(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from memwell.retrieval import keywords

    segmented: list[str] = []
    real = keywords._segment_tokens

    def counting(segment: str, trigram: bool) -> Iterator[str]:
        segmented.append(segment)
        return real(segment, trigram)

    monkeypatch.setattr(keywords, "_segment_tokens", counting)
    taken = iter_keywords("部署 发布, " + "服务监听端口 " * 1000)
    assert [next(taken) for _ in range(5)] == ["部", "署", "部署", "发", "布"]
    assert segmented == ["部署", "发布"]
