"""CJK character classes and n-gram segmentation for keyword search.

FTS5's ``unicode61`` tokenizer treats a run of Han, kana or Hangul characters as one token, so a
query word inside a longer run never matches. Indexing every CJK run as its character unigrams
and adjacent bigrams (:func:`segment_for_index`) and querying with bigrams
(:func:`segment_query_terms`) makes Chinese, Japanese and Korean keyword search work with the
default tokenizer.

The character classes are regex class bodies (no brackets). They list only word characters
(letters, numbers): CJK punctuation such as ``・`` or ``。`` is deliberately left out.
"""

from __future__ import annotations

import operator
from collections.abc import Iterator

from memwell.retrieval.char_class import CharClass
from memwell.retrieval.parsed_query import per_query
from memwell.util.lazy_import import lazy_pattern

HAN_CLASS = (
    "\u3005-\u3007"  # 々 〆 〇
    "\u3400-\u4dbf"  # Extension A
    "\u4e00-\u9fff"  # Unified Ideographs
    "\uf900-\ufaff"  # Compatibility Ideographs
    "\U00020000-\U0003ffff"  # planes 2 and 3: Extensions B and later, compatibility supplement
)
HIRAGANA_CLASS = "\u3041-\u3096\u309d-\u309f"
KATAKANA_CLASS = (
    "\u30a1-\u30fa"
    "\u30fc-\u30ff"  # ー ヽ ヾ ヿ
    "\u31f0-\u31ff"  # small katakana for Ainu
    "\uff66-\uff9f"  # halfwidth katakana
)
HANGUL_CLASS = (
    "\u1100-\u11ff"  # Jamo
    "\u3131-\u318e"  # Compatibility Jamo
    "\ua960-\ua97f"  # Jamo Extended-A
    "\uac00-\ud7af"  # Syllables
    "\ud7b0-\ud7ff"  # Jamo Extended-B
    "\uffa0-\uffdc"  # halfwidth Hangul
)
CJK_CLASS = HAN_CLASS + HIRAGANA_CLASS + KATAKANA_CLASS + HANGUL_CLASS

CJK_CHARS = CharClass(CJK_CLASS)


def is_cjk_char(ch: str) -> bool:
    """Whether ``ch`` is a single Han, kana or Hangul character (syllable or jamo)."""
    return ch in CJK_CHARS


def _bigrams(run: str) -> list[str]:
    return list(map(operator.add, run, run[1:]))


def _index_run(run: str) -> str:
    # join straight from the map (no bigram list): this runs for every CJK run indexed
    return f" {' '.join(run)} {' '.join(map(operator.add, run, run[1:]))} "


def _fts_run(run: str) -> str:
    return f" {' '.join(map(operator.add, run, run[1:]))} {run[-1]} "


def segment_for_fts(text: str) -> str:
    """Replace every CJK run with its adjacent bigrams then its last character, space-separated.

    Every character of a run starts exactly one of these tokens, so an FTS5 prefix query for a
    character (:func:`~memwell.retrieval.fts_query.fts_phrase`) matches each of its occurrences
    once: the term and document frequencies of :func:`segment_for_index`'s unigrams, from about
    half its tokens. ``"我爱北京"`` becomes ``" 我爱 爱北 北京 京 "``.
    """
    return text if text.isascii() else CJK_CHARS.sub(text, _fts_run)


def segment_for_fts_with_grams(text: str) -> tuple[str, set[str]]:
    """:func:`segment_for_fts` of ``text`` and the distinct unigrams and bigrams of its CJK
    runs as a tokenizer of words sees them, each run's bigrams made once for both. (A run with
    a character that is no word character, an unassigned code point in a CJK block, is two
    words' runs.)"""
    grams: set[str] = set()
    if text.isascii():
        return text, grams

    def render(run: str) -> str:
        bigrams = _bigrams(run)
        if run.isalnum():
            grams.update(run)
            grams.update(bigrams)
        else:
            for part in "".join(ch if ch.isalnum() else " " for ch in run).split():
                grams.update(part)
                grams.update(_bigrams(part))
        return f" {' '.join(bigrams)} {run[-1]} "

    return CJK_CHARS.sub(text, render), grams


def segment_for_index(text: str) -> str:
    """Replace every CJK run with its unigrams then its adjacent bigrams, space-separated.

    Non-CJK text is kept as is; the replacement is padded with spaces so it never fuses with
    neighbouring letters. ``"我爱北京"`` becomes ``" 我 爱 北 京 我爱 爱北 北京 "``.
    """
    return text if text.isascii() else CJK_CHARS.sub(text, _index_run)


def segment_query_terms(text: str) -> list[str]:
    """The search terms for the CJK runs in ``text``, in order; other characters are ignored.

    A one-character run gives itself; a longer run gives its adjacent bigrams only (every
    bigram was indexed by :func:`segment_for_index`, and unigrams would match too loosely).
    """
    terms: list[str] = []
    for start, stop in CJK_CHARS.runs(text):
        terms.extend(_run_terms(text[start:stop]))
    return terms


def split_query_token(token: str) -> list[str]:
    """``token`` with each CJK run replaced by its query terms (as in
    :func:`segment_query_terms`) and the text between runs kept whole, in order:
    ``"api接口v2"`` gives ``["api", "接口", "v2"]``."""
    terms: list[str] = []
    for piece, is_run in _pieces(token):
        if is_run:
            terms.extend(_run_terms(piece))
        else:
            terms.append(piece)
    return terms


def _pieces(token: str) -> Iterator[tuple[str, bool]]:
    """``token`` cut into its CJK runs and the text between them: (piece, is a CJK run)."""
    end = 0
    for start, stop in CJK_CHARS.runs(token):
        if start > end:
            yield token[end:start], False
        yield token[start:stop], True
        end = stop
    if end < len(token):
        yield token[end:], False


def _run_terms(run: str) -> list[str]:
    """A one-character run gives itself; a longer run gives its adjacent bigrams."""
    return [run] if len(run) == 1 else _bigrams(run)


_WORD = lazy_pattern(r"[^\W\d_]+")


@per_query
def _units(text: str) -> tuple[int, int]:
    """(CJK characters, reading units) of ``text``: a reading unit is a CJK character or a
    word of other letters; digits and punctuation are neither.

    Counted by letters, a Chinese paragraph that names a few English terms ("Super Bowl 50",
    "National Anthem") looked half English, though a reader sees Chinese text with some names
    in it: an English word spends five letters on what a Chinese character or two says.
    """
    cjk = sum(end - start for start, end in CJK_CHARS.runs(text))
    return cjk, cjk + sum(1 for _ in _WORD.finditer(CJK_CHARS.blank(text) if cjk else text))


def cjk_share(text: str) -> float:
    """The share of ``text``'s reading units (CJK characters and words of other letters;
    digits and punctuation aside) that are CJK."""
    cjk, units = _units(text)
    return cjk / units if units else 0.0


def other_script(query: str, text: str) -> bool:
    """Whether ``query`` and ``text`` are written in different scripts: one mostly CJK, the
    other almost not at all (an English question about a Chinese note, or the reverse).

    Between them a keyword match can only be a shared number or Latin name, which is no
    evidence that ``text`` answers ``query``; the meaning is the embedding's to judge. A
    query of digits alone, or of both scripts, decides nothing.
    """
    cjk, units = _units(query)
    if not units:
        return False
    asked = cjk / units
    if 0.2 <= asked <= 0.5 or not (asked > 0.5 or CJK_CHARS.found_in(text)):
        return False
    written = cjk_share(text)
    return (asked < 0.2 and written > 0.5) or (asked > 0.5 and written < 0.2)
