"""Maximal marginal relevance: reorder hits to trade relevance against redundancy."""

from __future__ import annotations

from collections.abc import Sequence
from collections.abc import Set as AbstractSet
from itertools import pairwise

from memwell.retrieval.candidate import Candidate
from memwell.retrieval.char_class import CharClass
from memwell.retrieval.hybrid import clamp01
from memwell.util.lazy_import import lazy_pattern

_ASCII_TOKEN = lazy_pattern(r"[a-z0-9_]+")
_CJK_CHARS = CharClass(
    "\u3040-\u309f\u30a0-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\u1100-\u11ff"
)
_is_cjk = _CJK_CHARS.__contains__


def mmr_tokens(text: str) -> frozenset[str]:
    """Similarity tokens: lowercase ASCII words, CJK-family unigrams and adjacent CJK bigrams."""
    lower = text.lower()
    tokens = set(_ASCII_TOKEN.findall(lower))
    tokens.update(char for char in lower if _is_cjk(char))
    tokens.update(a + b for a, b in pairwise(lower) if _is_cjk(a) and _is_cjk(b))
    return frozenset(tokens)


def jaccard(a: AbstractSet[str], b: AbstractSet[str]) -> float:
    """Jaccard similarity; two empty sets give 1, exactly one empty set gives 0."""
    if not a and not b:
        return 1.0
    union = len(a | b)
    return len(a & b) / union


def _relevance(scores: Sequence[float]) -> list[float]:
    """Min-max normalise ``scores`` into [0, 1]; all-equal scores all become 1."""
    low, high = min(scores), max(scores)
    if high == low:
        return [1.0] * len(scores)
    return [(s - low) / (high - low) for s in scores]


def mmr_rerank(items: Sequence[Candidate], *, lambda_: float = 0.7) -> list[Candidate]:
    """Greedily reorder ``items`` by ``λ·relevance - (1-λ)·max similarity to those picked``.

    Similarity is :func:`jaccard` over :func:`mmr_tokens` of each item's text; ``λ`` is
    clamped to [0, 1] (1 is a pure relevance sort). Ties go to the higher original score,
    then to input order. Every item is kept; the result is a new list of the same objects.
    """
    weight = clamp01(lambda_)
    remaining = list(range(len(items)))
    relevance = _relevance([c.score for c in items]) if items else []
    tokens = [mmr_tokens(c.text) for c in items]
    max_sim = [0.0] * len(items)
    order: list[int] = []
    while remaining:
        best = max(
            remaining,
            key=lambda i: (
                weight * relevance[i] - (1 - weight) * max_sim[i],
                items[i].score,
                -i,
            ),
        )
        remaining.remove(best)
        order.append(best)
        for i in remaining:
            max_sim[i] = max(max_sim[i], jaccard(tokens[i], tokens[best]))
    return [items[i] for i in order]
