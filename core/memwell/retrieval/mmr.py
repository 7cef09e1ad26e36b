"""Maximal marginal relevance: reorder hits to trade relevance against redundancy."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from collections.abc import Set as AbstractSet

from memwell.retrieval.candidate import Candidate
from memwell.retrieval.hybrid import clamp01
from memwell.util.lazy_import import lazy_pattern

_ASCII_TOKEN = lazy_pattern(r"[a-z0-9_]+")
_CJK_RUN = lazy_pattern(
    "[\u3040-\u309f\u30a0-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\u1100-\u11ff]+"
)


def mmr_tokens(text: str) -> frozenset[str]:
    """Similarity tokens: lowercase ASCII words, CJK-family unigrams and adjacent CJK bigrams."""
    lower = text.lower()
    tokens = set(_ASCII_TOKEN.findall(lower))
    for run in _CJK_RUN.findall(lower):
        tokens.update(run)
        tokens.update(run[i : i + 2] for i in range(len(run) - 1))
    return frozenset(tokens)


def jaccard(a: AbstractSet[str], b: AbstractSet[str]) -> float:
    """Jaccard similarity; two empty sets give 1, exactly one empty set gives 0."""
    if not a and not b:
        return 1.0
    shared = len(a & b) if len(a) <= len(b) else len(b & a)
    return shared / (len(a) + len(b) - shared)


def _relevance(scores: Sequence[float]) -> list[float]:
    """Min-max normalise ``scores`` into [0, 1]; all-equal scores all become 1."""
    low, high = min(scores), max(scores)
    if high == low:
        return [1.0] * len(scores)
    return [(s - low) / (high - low) for s in scores]


class _TokenBits:
    """Each item's :func:`mmr_tokens` as a bitset over the tokens seen so far, made on first
    use: a Jaccard similarity is then an AND and a popcount (:func:`_max_jaccard`)."""

    def __init__(self, items: Sequence[Candidate]) -> None:
        self.items = items
        self.vocabulary: dict[str, int] = {}
        self.sets: dict[int, tuple[int, int]] = {}

    def of(self, i: int) -> tuple[int, int]:
        """Item ``i``'s bitset and token count."""
        if i not in self.sets:
            ids = [
                self.vocabulary.setdefault(t, len(self.vocabulary))
                for t in mmr_tokens(self.items[i].text)
            ]
            buffer = bytearray((max(ids, default=0) >> 3) + 1)
            for k in ids:
                buffer[k >> 3] |= 1 << (k & 7)
            self.sets[i] = (int.from_bytes(buffer, "little"), len(ids))
        return self.sets[i]


def _max_jaccard(bits: tuple[int, int], others: Sequence[tuple[int, int]], start: float) -> float:
    """The largest of ``start`` and the Jaccard similarity of ``bits`` with each of ``others``
    (bitset, size): :func:`jaccard`'s value, computed without a call per pair."""
    a, size_a = bits
    best = start
    for b, size_b in others:
        shared = (a & b).bit_count()
        union = size_a + size_b - shared
        similarity = shared / union if union else 1.0
        if similarity > best:
            best = similarity
    return best


def mmr_order(items: Sequence[Candidate], *, lambda_: float = 0.7) -> Iterator[Candidate]:
    """Yield ``items`` greedily by ``λ·relevance - (1-λ)·max similarity to those yielded``.

    Lazy: a consumer that stops after a few picks pays for those alone. Each pick scans the
    unpicked items by falling relevance and stops at the first whose ``λ·relevance`` (the
    most its MMR score can be) is below the best score found, so only items near the top
    are tokenized and compared; the order is exactly the eager greedy one.
    """
    weight = clamp01(lambda_)
    relevance = _relevance([c.score for c in items]) if items else []
    pending = sorted(range(len(items)), key=lambda i: (-items[i].score, i))
    bits = _TokenBits(items)
    max_sim = [0.0] * len(items)
    compared = [0] * len(items)  # how many picks each item's max_sim has seen
    picked: list[tuple[int, int]] = []  # the picks' bitsets, in order

    while pending:
        best = -1
        best_key = (0.0, 0.0, 0)
        for i in pending:
            bound = weight * relevance[i]
            if best >= 0 and bound < best_key[0]:
                break
            if compared[i] < len(picked):
                max_sim[i] = _max_jaccard(bits.of(i), picked[compared[i] :], max_sim[i])
                compared[i] = len(picked)
            key = (bound - (1 - weight) * max_sim[i], items[i].score, -i)
            if best < 0 or key > best_key:
                best, best_key = i, key
        pending.remove(best)
        picked.append(bits.of(best))
        yield items[best]


def mmr_rerank(items: Sequence[Candidate], *, lambda_: float = 0.7) -> list[Candidate]:
    """Reorder ``items`` by maximal marginal relevance (:func:`mmr_order`), all of them.

    Similarity is :func:`jaccard` over :func:`mmr_tokens` of each item's text; ``λ`` is
    clamped to [0, 1] (1 is a pure relevance sort). Ties go to the higher original score,
    then to input order. Every item is kept; the result is a new list of the same objects.
    """
    return list(mmr_order(items, lambda_=lambda_))
