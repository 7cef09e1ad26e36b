"""How much of a question a keyword hit covers, by the informative weight of its terms.

BM25 scores rescaled to the best hit make the best keyword hit 1.0 whatever share of the
question it holds: "rehearsal schedule for the theatre play's staging" finds a note that says
"staging" and nothing else, and that note scored like an answer. Here each of the question's
terms weighs its IDF in the index (``log(1 + (N - df + 0.5) / (df + 0.5))``, so a word in
every chunk weighs almost nothing and a word in none, which no hit can hold, weighs the most),
and a hit's *coverage* is the share of that mass its chunk holds, terms compared by their index
stems (:mod:`memwell.retrieval.stems`; CJK n-grams by containment, as the index holds them).
Function words and every word that stems like one ("use" is indexed as "us", "going" as "go")
weigh nothing: they never carry a hit. The score floor weighs a hit's keyword score by its
coverage (:func:`memwell.retrieval.pipeline.evidence`); the ranking is unchanged.
"""

from __future__ import annotations

import functools
import math
import unicodedata
from collections.abc import Callable, Collection, Mapping, Sequence

from memwell.retrieval.candidate import Candidate
from memwell.retrieval.cjk import is_cjk_char
from memwell.retrieval.fts_query import chunk_terms
from memwell.retrieval.stems import stems
from memwell.retrieval.stopwords import STOPWORDS_EN

#: Verbs that stem to themselves and say nothing about a topic; with the stop words they
#: weigh nothing ("Reports go out" holds no answer to "which books am I going through").
LIGHT_VERBS = frozenset({"go", "goes", "going", "went", "gone"})


@functools.cache
def function_stems() -> frozenset[str]:
    """The index stems of the English stop words and :data:`LIGHT_VERBS`."""
    return frozenset(stems(STOPWORDS_EN | LIGHT_VERBS).values())


def idf(df: int, total: int) -> float:
    """The informative weight of a term found in ``df`` of ``total`` chunks (always > 0)."""
    return math.log(1.0 + (max(total, df) - df + 0.5) / (df + 0.5))


def _is_gram(term: str) -> bool:
    return not term.isascii() and is_cjk_char(term[0])


def term_weights(
    terms: Sequence[str], frequencies: Mapping[str, int], total: int
) -> dict[str, float]:
    """Each distinct query term's :func:`idf`, keyed by its index stem (CJK n-grams as they
    are); terms missing from ``frequencies`` count as found in no chunk, terms that stem like
    a function word (:func:`function_stems`) weigh 0. Spellings of one stem weigh as the
    rarest of them."""
    words = [t for t in terms if not _is_gram(t)]
    stem_of = stems(words)
    by_stem: dict[str, int] = {}
    for term in dict.fromkeys(terms):
        key = term if _is_gram(term) else stem_of[term]
        df = frequencies.get(term, 0)
        by_stem[key] = min(by_stem.get(key, df), df)
    return stem_weights(by_stem, total)


def stem_weights(frequencies: Mapping[str, int], total: int) -> dict[str, float]:
    """:func:`term_weights` for terms that are index stems already (a backend that stems
    its own terms): each one's :func:`idf` from its document frequency in ``frequencies``,
    0 for a function word's stem (:func:`function_stems`)."""
    function = function_stems()
    return {key: 0.0 if key in function else idf(df, total) for key, df in frequencies.items()}


def coverage(
    weights: Mapping[str, float],
    candidate: Candidate,
    held: Callable[[Candidate], Collection[str]] | None = None,
) -> float:
    """The share of the ``weights`` (:func:`term_weights`) whose term ``candidate`` holds;
    ``held`` gives a chunk's index terms for a backend whose terms are not FTS5's (by
    default the chunk's words are stemmed as the builtin index stems them)."""
    total = sum(weights.values())
    if total <= 0:  # nothing informative asked: the keyword score is all there is
        return 1.0
    if held is not None:
        terms_held = set(held(candidate))
        return sum(w for key, w in weights.items() if key in terms_held) / total
    terms = candidate.terms if candidate.terms is not None else chunk_terms(candidate.text)
    firsts = _first_letters(weights)
    stem_of = stems(w for w in terms.words.split() if w[:1] in firsts)
    held_stems = set(stem_of.values())
    text = ""
    mass = 0.0
    for key, weight in weights.items():
        if _is_gram(key):
            if not text:
                text = unicodedata.normalize("NFC", candidate.text).lower()
            if key in text:
                mass += weight
        elif key in held_stems:
            mass += weight
    return mass / total


def _first_letters(weights: Mapping[str, float]) -> frozenset[str]:
    """First characters of the stems: a word starting otherwise cannot stem to one of them
    (a Porter stem keeps its word's first letters), so it is not stemmed at all."""
    return frozenset(key[:1] for key in weights if not _is_gram(key))


def measure_coverage(
    keyword: Sequence[Candidate],
    weights: Mapping[str, float],
    held: Callable[[Candidate], Collection[str]] | None = None,
) -> None:
    """Set each hit's ``coverage`` (:func:`coverage`)."""
    for cand in keyword:
        cand.coverage = coverage(weights, cand, held)
