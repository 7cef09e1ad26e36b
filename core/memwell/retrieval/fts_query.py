"""Safe FTS5 query building, bm25 score normalisation and the keyword-only fallback boost."""

from __future__ import annotations

import math
import unicodedata
from collections.abc import Collection, Iterable, Sequence
from typing import NamedTuple

import msgspec

from memwell.retrieval.boolean import BooleanTerms, parse_boolean, without_excluded
from memwell.retrieval.cjk import (
    CJK_CHARS,
    is_cjk_char,
    segment_for_fts_with_grams,
    split_query_token,
)
from memwell.retrieval.keywords import TOKEN_RE, tokenize
from memwell.retrieval.parsed_query import per_query
from memwell.retrieval.stopwords import ALL_STOPWORDS

MAX_TERMS = 64
"""At most this many distinct terms reach the query; the first ones are kept."""

TRIGRAM_MIN_CHARS = 3
"""The trigram tokenizer cannot MATCH terms shorter than this; they become LIKE terms."""

MAX_BOOLEAN_GROUPS = 16
"""At most this many ``+must`` and as many ``-must_not`` terms reach the MATCH expression (the
ranking pipeline's filter still applies every one, see :mod:`memwell.retrieval.boolean`)."""

MAX_GROUP_TOKENS = 8
"""A ``+"phrase"`` reaches the MATCH expression with at most this many of its tokens."""

MAX_TRIGRAM_TERM_CHARS = 64
"""Trigram MATCH terms are cut to this many code points: a prefix is still a required substring,
and FTS5's cost for a phrase grows with its number of trigrams."""

_JOINERS = {"or": " OR ", "and": " AND "}
_TOKENIZERS = ("unicode61", "trigram")


class FtsQuery(msgspec.Struct, frozen=True):
    """A keyword query ready for SQLite.

    ``match`` is a safe FTS5 MATCH expression (``None`` when only substring terms remain).
    ``like_terms`` are patterns for ``text LIKE ? ESCAPE '\\'`` (trigram tokenizer only),
    already escaped and wrapped in ``%``; the backend decides how they combine with ``match``
    (the reference ANDs them). ``terms`` are the free-text terms ``match`` ORs (or ANDs);
    ``must`` and ``must_not`` are the MATCH groups of the query's ``+term`` and ``-term``
    operators (:mod:`memwell.retrieval.boolean`), ANDed to and excluded from them.
    """

    match: str | None
    like_terms: tuple[str, ...]
    terms: tuple[str, ...] = ()
    joiner: str = " OR "
    cjk_prefixes: bool = False
    must: tuple[str, ...] = ()
    must_not: tuple[str, ...] = ()

    def __eq__(self, other: object) -> bool:
        """Queries are equal when SQLite runs the same thing: ``match`` and ``like_terms``
        (``terms`` and ``joiner`` only say how ``match`` was built)."""
        if not isinstance(other, FtsQuery):
            return NotImplemented
        return self.match == other.match and self.like_terms == other.like_terms

    def __hash__(self) -> int:
        return hash((self.match, self.like_terms))

    def keeping(self, keep: Collection[str]) -> FtsQuery:
        """The same query with only the MATCH ``terms`` in ``keep`` (all of them if none are)."""
        kept = tuple(t for t in self.terms if t in keep) or self.terms
        should = self.joiner.join(fts_phrase(t, self.cjk_prefixes) for t in kept)
        match = boolean_match(should, self.must, self.must_not)
        return msgspec.structs.replace(self, match=match, terms=kept)


def boolean_match(should: str, must: Sequence[str], must_not: Sequence[str]) -> str | None:
    """``(should) AND (must...) NOT (must_not OR ...)``; just ``should`` without operators;
    ``None`` when nothing is required or wanted (FTS5 has no bare NOT)."""
    if not must and not must_not:
        return should or None
    positives = [f"({part})" for part in (should, *must) if part]
    if not positives:
        return None
    expression = " AND ".join(positives)
    if must_not:
        expression = f"({expression}) NOT ({' OR '.join(must_not)})"
    return expression


def _searchable(terms: Iterable[str]) -> list[str]:
    """Drop underscore-only terms: FTS5 finds no token in them, so they would void an AND."""
    return [term for term in terms if term.strip("_")]


def _tokens(query: str) -> list[str]:
    return _searchable(tokenize(query))


def _word_terms(query: str) -> list[str]:
    """Tokens with CJK runs replaced by their query n-grams (see :mod:`memwell.retrieval.cjk`)."""
    terms: list[str] = []
    for token in tokenize(query):
        if token.isascii():  # no CJK run: skips compiling the CJK class for an ASCII query
            terms.append(token)
            continue
        terms.extend(split_query_token(token))
    return _searchable(terms)


def _select(terms: list[str], drop_stopwords: bool) -> list[str]:
    unique = list(dict.fromkeys(terms))
    if drop_stopwords:
        unique = [term for term in unique if term not in ALL_STOPWORDS]
    return unique[:MAX_TERMS]


def _split_trigram(terms: list[str]) -> tuple[list[str], list[str]]:
    """(MATCH terms, LIKE terms): short terms go to LIKE, long ones are cut for MATCH."""
    long_terms = (term[:MAX_TRIGRAM_TERM_CHARS] for term in terms if len(term) >= TRIGRAM_MIN_CHARS)
    short_terms = [term for term in terms if len(term) < TRIGRAM_MIN_CHARS]
    return list(dict.fromkeys(long_terms)), short_terms


def fts_phrase(term: str, cjk_prefixes: bool = False) -> str:
    """``term`` as a quoted FTS5 phrase (no FTS5 syntax survives). With ``cjk_prefixes`` a
    single CJK character is a prefix query (``"北"*``): in an index written with
    :func:`~memwell.retrieval.cjk.segment_for_fts` it matches the bigram each occurrence
    starts, or the run's last character."""
    quoted = '"' + term.replace('"', '""') + '"'
    if cjk_prefixes and len(term) == 1 and not term.isascii() and is_cjk_char(term):
        return quoted + "*"
    return quoted


def _like_pattern(term: str) -> str:
    escaped = term.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return f"%{escaped}%"


@per_query
def build_fts_query(
    query: str,
    *,
    tokenizer: str = "unicode61",
    mode: str = "or",
    drop_stopwords: bool = True,
    cjk_prefixes: bool = False,
) -> FtsQuery | None:
    """Turn free user text into a safe FTS5 query, or ``None`` when there is nothing to search.

    Every MATCH term is a quoted string joined by ``OR``/``AND`` (``mode``), so no FTS5 syntax
    typed by the user survives. With ``unicode61`` CJK runs become the n-grams that
    :func:`~memwell.retrieval.cjk.segment_for_index` indexed. With ``trigram`` tokens shorter
    than three code points become LIKE terms. Stop words are dropped, so a query of stop words
    only gives ``None`` (it would otherwise rank whatever contains "the" first, at score 1);
    terms are deduplicated and capped at :data:`MAX_TERMS`. ``cjk_prefixes`` is for an index
    written with :func:`~memwell.retrieval.cjk.segment_for_fts` (see :func:`fts_phrase`).
    """
    if mode not in _JOINERS:
        raise ValueError(f"unknown FTS query mode {mode!r}; expected 'or' or 'and'")
    if tokenizer not in _TOKENIZERS:
        raise ValueError(f"unknown FTS tokenizer {tokenizer!r}; expected one of {_TOKENIZERS}")
    boolean = parse_boolean(query) if ("+" in query or "-" in query) else BooleanTerms()
    text = without_excluded(query) if boolean.must_not else query
    if tokenizer == "trigram":
        match_terms, like_terms = _split_trigram(_select(_tokens(text), drop_stopwords))
    else:
        match_terms, like_terms = _select(_word_terms(text), drop_stopwords), []
    prefixes = cjk_prefixes and tokenizer == "unicode61"
    must, must_like = _groups(boolean.must, tokenizer, prefixes)
    must_not, _ = _groups(boolean.must_not, tokenizer, prefixes, exact=True)
    like_terms = list(dict.fromkeys([*like_terms, *must_like]))
    if not match_terms and not like_terms and not must:
        return None
    should = _JOINERS[mode].join(fts_phrase(t, prefixes) for t in match_terms)
    return FtsQuery(
        match=boolean_match(should, must, must_not),
        like_terms=tuple(map(_like_pattern, like_terms)),
        terms=tuple(match_terms),
        joiner=_JOINERS[mode],
        cjk_prefixes=prefixes,
        must=must,
        must_not=must_not,
    )


def _groups(
    groups: Sequence[Sequence[str]], tokenizer: str, prefixes: bool, *, exact: bool = False
) -> tuple[tuple[str, ...], list[str]]:
    """The MATCH groups of ``+term`` (or ``-term``) operators, each its phrases ANDed, and the
    LIKE terms of the trigram tokenizer's short tokens. With ``exact``, a group that MATCH
    cannot hold whole (a short trigram token) is left out: the ranking filter excludes it."""
    out: list[str] = []
    like: list[str] = []
    for tokens in groups[:MAX_BOOLEAN_GROUPS]:
        terms = _searchable(
            t for token in tokens[:MAX_GROUP_TOKENS] for t in _group_terms(token, tokenizer)
        )
        if tokenizer == "trigram":
            short = [t for t in terms if len(t) < TRIGRAM_MIN_CHARS]
            if short and exact:
                continue
            like += short
            terms = [t[:MAX_TRIGRAM_TERM_CHARS] for t in terms if len(t) >= TRIGRAM_MIN_CHARS]
        if terms:
            out.append(" AND ".join(fts_phrase(t, prefixes) for t in dict.fromkeys(terms)))
    return tuple(dict.fromkeys(out)), like


def _group_terms(token: str, tokenizer: str) -> list[str]:
    if tokenizer == "trigram" or token.isascii():
        return [token]
    return split_query_token(token)


def bm25_rank_to_score(rank: float) -> float:
    """Map an FTS5 bm25 rank (more negative is better) to a score in (0, 1]."""
    if not math.isfinite(rank):
        return 0.001
    if rank < 0:
        return -rank / (1 - rank)
    return 1 / (1 + rank)


@per_query
def query_terms(query: str) -> frozenset[str]:
    """The distinct terms of ``query`` that :func:`keyword_boost` compares (CJK as n-grams);
    compute them once per query, not once per candidate."""
    return frozenset(_word_terms(query))


class ChunkTerms(NamedTuple):
    """A chunk's terms as the keyword-only boost compares them; :func:`chunk_terms` computes
    them once, when the chunk is indexed.

    ``words`` are its distinct terms other than CJK n-grams, space-separated (terms are runs of
    word characters, so they never contain a space); ``distinct`` is how many distinct terms
    it has, CJK n-grams included. The n-grams are not stored: a CJK query n-gram is one of the
    chunk's exactly when it occurs in the chunk's NFC text, which is shorter to scan.
    """

    words: str
    distinct: int


def chunk_terms(text: str) -> ChunkTerms:
    """The :class:`ChunkTerms` of a chunk's text. The text is normalised as a query is (NFC,
    lowercase), then each CJK run becomes its unigrams and bigrams; words keep the order of
    their first appearance."""
    return fts_text_and_terms(text)[1]


def fts_text_and_terms(text: str) -> tuple[str, ChunkTerms]:
    """What a chunk's ``text`` is indexed as for keyword search: its NFC text with CJK runs
    segmented (:func:`~memwell.retrieval.cjk.segment_for_fts`) and its :func:`chunk_terms`,
    from one pass over its CJK runs."""
    nfc = unicodedata.normalize("NFC", text)
    fts_text, grams = segment_for_fts_with_grams(nfc)
    lowered = nfc.lower()  # before the runs are blanked: a sigma's case looks at neighbours
    # Blanking the CJK runs leaves the words and the pieces of words between runs.
    words = TOKEN_RE.findall(CJK_CHARS.blank(lowered) if grams else lowered)
    distinct = dict.fromkeys(words)
    joined = " ".join(distinct)
    # Only a term with an underscore can be underscore-only: most chunks have none to drop.
    if "_" in joined:
        joined = " ".join(_searchable(distinct))
    count = joined.count(" ") + 1 + len(grams) if joined else len(grams)
    return fts_text, ChunkTerms(joined, count)


class BoostTerms(NamedTuple):
    """A query's terms as the keyword-only boost looks for them; :func:`boost_terms` makes
    them once per query."""

    terms: frozenset[str]
    """Every query term: the share's denominator and the path bonus count them all."""
    words: tuple[str, ...]
    """The terms other than CJK n-grams that some chunk may hold, space-padded."""
    grams: tuple[str, ...]
    """The CJK n-grams that some chunk may hold."""


def boost_terms(terms: frozenset[str], absent: Collection[str] = ()) -> BoostTerms:
    """``terms`` (:func:`query_terms`) ready for :func:`boost_looking_for`; ``absent`` are
    terms the index holds in no chunk, counted in the share without being looked for."""
    words: list[str] = []
    grams: list[str] = []
    for term in terms:
        if term in absent:
            continue
        if term.isascii() or not is_cjk_char(term[0]):  # a term is all CJK or has none
            words.append(f" {term} ")
        else:
            grams.append(term)
    return BoostTerms(terms, tuple(words), tuple(grams))


def keyword_boost(
    query: str | frozenset[str], text: str, path: str, terms_of_text: ChunkTerms | None = None
) -> float:
    """Extra score for a keyword-only hit, capped at 1 (the caller adds it to the text score).

    ``query`` is the query or its :func:`query_terms`; ``terms_of_text`` is the text's
    :func:`chunk_terms` when the index stored them (computed here otherwise). When scoring
    many hits, make the :func:`boost_terms` once and call :func:`boost_looking_for`.
    ``0.45`` x the share of query terms found in the text, ``0.2`` x overlap over the distinct
    text terms, ``0.18`` per query term contained in the lowercased path, and up to ``0.18``
    for text length (``len(text) / 160``). CJK is compared as the index n-grams.
    """
    terms = query_terms(query) if isinstance(query, str) else query
    return boost_looking_for(boost_terms(terms), text, path, terms_of_text)


def boost_looking_for(
    query: BoostTerms, text: str, path: str, terms_of_text: ChunkTerms | None = None
) -> float:
    """:func:`keyword_boost` of the query's :func:`boost_terms` (each looked-for term costs a
    scan of the chunk's words or text)."""
    return _boost(query, text, path, terms_of_text, None)


def boosted_score(
    query: BoostTerms,
    text_score: float,
    text: str,
    path: str,
    terms_of_text: ChunkTerms | None = None,
) -> float:
    """A keyword-only hit's score, ``min(1, text_score + boost_looking_for(...))``. The CJK
    n-grams are not looked for when the rest of the boost already takes the score to 1: finding
    more terms could only raise a boost that the cap drops."""
    return min(1.0, text_score + _boost(query, text, path, terms_of_text, text_score))


def _boost(
    query: BoostTerms,
    text: str,
    path: str,
    terms_of_text: ChunkTerms | None,
    text_score: float | None,
) -> float:
    """The boost; with ``text_score``, the n-grams are skipped when ``text_score`` plus the
    boost without them reaches 1 (the boost grows with every term found)."""
    if terms_of_text is None:
        terms_of_text = chunk_terms(text)
    words, distinct = terms_of_text
    terms = query.terms
    # map(str.__contains__) rather than generators: this runs for every candidate of a search
    overlap = sum(map(f" {words} ".__contains__, query.words)) if query.words and words else 0
    path_part = 0.18 * sum(map(path.lower().__contains__, terms))
    length_part = min(len(text) / 160, 0.18)
    if query.grams and (
        text_score is None
        or text_score + _share(overlap, terms, distinct, path_part, length_part) < 1.0
    ):
        nfc = text if unicodedata.is_normalized("NFC", text) else unicodedata.normalize("NFC", text)
        overlap += sum(map(nfc.__contains__, query.grams))
    return _share(overlap, terms, distinct, path_part, length_part)


def _share(
    overlap: int, terms: frozenset[str], distinct: int, path_part: float, length_part: float
) -> float:
    coverage = overlap / len(terms) if terms else 0.0
    density = overlap / distinct if distinct else 0.0
    return min(1.0, 0.45 * coverage + 0.2 * density + path_part + length_part)
