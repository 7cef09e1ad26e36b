"""Tokenizing and keyword extraction for keyword (full-text) search."""

from __future__ import annotations

import unicodedata
from collections.abc import Iterator

from memwell.retrieval.char_class import CharClass
from memwell.retrieval.cjk import (
    CJK_CLASS,
    HAN_CLASS,
    HANGUL_CLASS,
    HIRAGANA_CLASS,
    KATAKANA_CLASS,
    segment_for_index,
    segment_query_terms,
)
from memwell.retrieval.stopwords import ALL_STOPWORDS, STOPWORDS_KO
from memwell.util.lazy_import import lazy_pattern

# For ``str`` patterns Python's ``\w`` matches exactly the characters of general category L* or
# N*, plus ``_``: the reference's ``[\p{L}\p{N}_]`` (checked against ``unicodedata`` over every
# code point). Combining marks (M*) are *not* word characters, as in the reference; FTS5
# ``unicode61`` splits on most of them too, but strips Latin diacritics (U+0300..) and joins the
# word, which is why :func:`tokenize` composes them first (NFC).
TOKEN_RE = lazy_pattern(r"\w+")

_KANA = CharClass(HIRAGANA_CLASS + KATAKANA_CLASS)
_HAN = CharClass(HAN_CLASS)
_HANGUL = CharClass(HANGUL_CLASS)
_HANGUL_SYLLABLE = CharClass("\uac00-\ud7af")
_ASCII_WORD = lazy_pattern("[a-z0-9_]+")
# Japanese segment parts: a non-CJK word, a katakana run, a kanji run (group 1), or a run of at
# least two hiragana (single hiragana are particles).
_JA_PART = lazy_pattern(
    f"[^\\W{CJK_CLASS}]+|[{KATAKANA_CLASS}]+|([{HAN_CLASS}]+)|[{HIRAGANA_CLASS}]{{2,}}"
)
_HAN_BLOCKS = lazy_pattern(f"[{HAN_CLASS}]+|[^{HAN_CLASS}]+")
# Korean trailing particles, longest first so that "에서" wins over a shorter match.
_KO_PARTICLES = sorted(
    [
        "에서",
        "으로",
        "에게",
        "한테",
        "처럼",
        "같이",
        "보다",
        "까지",
        "부터",
        "마다",
        "밖에",
        "대로",
        "은",
        "는",
        "이",
        "가",
        "을",
        "를",
        "의",
        "에",
        "로",
        "와",
        "과",
        "도",
        "만",
    ],
    key=len,
    reverse=True,
)


def tokenize(text: str) -> list[str]:
    """NFC-normalise and lowercase ``text``; return its runs of letters, digits and underscores.

    NFC keeps decomposed accents inside their word ("nai\u0308ve" is one token, like in FTS5).
    """
    return TOKEN_RE.findall(unicodedata.normalize("NFC", text).lower())


def _segments(text: str) -> Iterator[str]:
    """Split on whitespace and Unicode punctuation (general category P*), word by word, so
    that a caller wanting the first few keywords of a long text stops early."""
    for word in text.split():
        if word.isascii() and word.isalnum():
            yield word
        else:
            yield from "".join(
                " " if unicodedata.category(ch)[0] == "P" else ch for ch in word
            ).split()


def _japanese_tokens(segment: str, trigram: bool) -> Iterator[str]:
    for part in _JA_PART.finditer(segment):
        yield part.group()
        if part.group(1) and not trigram:
            yield from segment_query_terms(part.group())


def _han_tokens(segment: str, trigram: bool) -> list[str]:
    if trigram:
        return _HAN_BLOCKS.findall(segment)
    return segment_for_index(segment).split()


def _strip_korean_particle(token: str) -> str | None:
    for particle in _KO_PARTICLES:
        if len(token) > len(particle) and token.endswith(particle):
            return token[: -len(particle)]
    return None


def _is_useful_korean_stem(stem: str) -> bool:
    """Reject one-syllable stems ("논의" -> "논") but keep ASCII ones ("api를" -> "api")."""
    if _HANGUL_SYLLABLE.found_in(stem):
        return len(stem) >= 2
    return _ASCII_WORD.fullmatch(stem) is not None


def _korean_tokens(segment: str) -> Iterator[str]:
    stem = _strip_korean_particle(segment)
    stem_is_stopword = stem is not None and stem in STOPWORDS_KO
    if segment not in STOPWORDS_KO and not stem_is_stopword:
        yield segment
    if stem is not None and not stem_is_stopword and _is_useful_korean_stem(stem):
        yield stem


def _segment_tokens(segment: str, trigram: bool) -> Iterator[str]:
    if segment.isascii():  # no CJK: skips compiling the CJK classes for an ASCII query
        yield segment
    elif _KANA.found_in(segment):
        yield from _japanese_tokens(segment, trigram)
    elif _HAN.found_in(segment):
        yield from _han_tokens(segment, trigram)
    elif _HANGUL.found_in(segment):
        yield from _korean_tokens(segment)
    else:
        yield segment


def _is_valid_keyword(token: str) -> bool:
    if token.isascii() and token.isalpha() and len(token) < 3:
        return False
    if token.isdigit():
        return False
    return not all(unicodedata.category(ch)[0] in "PS" for ch in token)


def extract_keywords(query: str, *, trigram: bool = False) -> list[str]:
    """Meaningful keywords of a conversational query, in order and without duplicates
    (:func:`iter_keywords` as a list).

    Japanese segments are split by script (kanji runs also give bigrams), Chinese runs give
    unigrams and bigrams (the whole run when ``trigram``), Korean words also give their stem
    without a trailing particle. Stop words (seven languages), ASCII words shorter than three
    letters, numbers and symbol-only tokens are dropped.
    ``"that thing we discussed about the API"`` gives ``["discussed", "api"]``.
    """
    return list(iter_keywords(query, trigram=trigram))


def iter_keywords(text: str, *, trigram: bool = False) -> Iterator[str]:
    """:func:`extract_keywords` one at a time, segmenting no more of ``text`` than the keywords
    taken need (a snippet's first few keywords without its hundreds of CJK n-grams)."""
    seen: set[str] = set()
    for segment in _segments(text.lower()):
        for token in _segment_tokens(segment, trigram):
            if token not in seen and token not in ALL_STOPWORDS and _is_valid_keyword(token):
                seen.add(token)
                yield token
