"""Keyword terms for Postgres full-text search, computed by memwell rather than by Postgres.

The builtin backend indexes with FTS5's ``porter unicode61 remove_diacritics 2`` over the NFC
text whose CJK runs became bigrams and each run's last character
(:func:`memwell.retrieval.cjk.segment_for_fts`), and searches one CJK character as a prefix.
This module indexes every CJK unigram and bigram instead
(:func:`memwell.retrieval.cjk.segment_for_index`), which gives a character the same term and
document frequencies, and counts BM25's document length as FTS5 counts it. It produces the
terms in Python and hands Postgres ready-made ``tsvector`` values (in
binary, :mod:`.copy_binary`) and ``tsquery`` literals, so nothing depends on the server's text
search configurations (the equivalent of the ``simple`` configuration over pre-segmented,
pre-stemmed text) and CJK search works on any server. Positions are kept because BM25 needs
each term's frequency.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache

import snowballstemmer  # type: ignore[import-untyped]
from memwell.plugin import build_fts_query, segment_for_fts, segment_for_index

LEXEME_VERSION = 2
"""Bumped whenever the terms change; part of the index identity (a change reindexes)."""

_TOKEN = re.compile(r"[^\W_]+")
_ASCII_WORD = re.compile(r"[a-z]+")
_MAX_LEXEME_BYTES = 2046  # Postgres refuses longer lexemes
_MAX_POSITION = 16383  # Postgres clamps larger positions (and would merge duplicates)
_MAX_POSITIONS = 256  # Postgres keeps at most this many positions per lexeme
_STEMMER = snowballstemmer.stemmer("porter")


@lru_cache(maxsize=200_000)
def _lexeme(token: str) -> str:
    """Lower-case, strip diacritics (keeping Hangul syllables), stem ASCII words (Porter);
    ``""`` for a term longer than Postgres accepts."""
    lowered = token.lower()
    if not lowered.isascii():
        decomposed = unicodedata.normalize("NFD", lowered)
        stripped = "".join(ch for ch in decomposed if unicodedata.category(ch) != "Mn")
        lowered = unicodedata.normalize("NFC", stripped)
    if _ASCII_WORD.fullmatch(lowered):
        lowered = str(_STEMMER.stemWord(lowered))
    return lowered if len(lowered.encode()) <= _MAX_LEXEME_BYTES else ""


def _lexemes(text: str) -> list[str]:
    return [t for t in map(_lexeme, _TOKEN.findall(text)) if t]


def terms_of(text: str) -> list[str]:
    """Every indexed term of ``text`` in order (stop words kept, as FTS5 keeps them)."""
    return _lexemes(segment_for_index(unicodedata.normalize("NFC", text)))


def length_of(text: str) -> int:
    """BM25's document length of ``text``: its tokens in the builtin backend's FTS5 table
    (fewer than :func:`terms_of` gives when the text has CJK)."""
    return _length_of_nfc(unicodedata.normalize("NFC", text), None)


def _length_of_nfc(nfc: str, terms: list[str] | None) -> int:
    """:func:`length_of` of NFC text; ASCII text has no CJK run, so its ``terms`` count."""
    if terms is not None and nfc.isascii():
        return len(terms)
    return len(_lexemes(segment_for_fts(nfc)))


def tsquery_literal(lexeme: str) -> str:
    """``lexeme`` quoted for a ``tsquery`` literal."""
    return "'" + lexeme.replace("\\", "\\\\").replace("'", "''") + "'"


@dataclass(frozen=True)
class IndexedText:
    """A chunk's ``tsvector`` as (lexeme, positions) entries, its length in terms (BM25's
    document length) and its distinct terms (what it adds to document frequencies)."""

    entries: list[tuple[str, list[int]]]
    length: int

    @property
    def lexemes(self) -> tuple[str, ...]:
        return tuple(t for t, _ in self.entries)


def index_text(text: str) -> IndexedText:
    """The ``tsvector`` of ``text``: each term with the positions it occurs at (the first
    16383 terms carry positions, at most 256 per term), and its :func:`length_of`."""
    nfc = unicodedata.normalize("NFC", text)
    terms = _lexemes(segment_for_index(nfc))
    positions: dict[str, list[int]] = {}
    for pos, term in enumerate(terms[:_MAX_POSITION], start=1):
        slots = positions.get(term)
        if slots is None:
            positions[term] = [pos]
        elif len(slots) < _MAX_POSITIONS:
            slots.append(pos)
    return IndexedText(entries=list(positions.items()), length=_length_of_nfc(nfc, terms))


@dataclass(frozen=True)
class QueryTerms:
    """A keyword query as distinct lexemes."""

    lexemes: tuple[str, ...]


def query_terms(query: str) -> QueryTerms | None:
    """The query's searchable terms (memwell's FTS term selection, stop words dropped)."""
    fts = build_fts_query(query, tokenizer="unicode61", mode="or")
    if fts is None:
        return None
    lexemes = _dedupe(term for raw in fts.terms for term in _lexemes(raw))
    return QueryTerms(lexemes) if lexemes else None


def _dedupe(items: Iterable[str]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(items))
