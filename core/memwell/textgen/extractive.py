"""The offline text generator: deterministic extractive summaries, no model and no key.

It cannot follow instructions, so ``system`` is ignored and the prompt is treated as the text
to condense: sentences are scored by how many of the text's recurring keywords they carry
(:func:`memwell.retrieval.keywords.extract_keywords`), and the best ones, as many as fit the
budget, are returned in their original order. The same input always gives the same output.
"""

from __future__ import annotations

import math
import re
from collections import Counter

from memwell.retrieval.chunking import CHARS_PER_TOKEN
from memwell.retrieval.keywords import extract_keywords

EXTRACTIVE_ID = "extractive"
_SENTENCE_END = re.compile(r"(?<=[.!?。！？])\s+|\n+")


def split_sentences(text: str) -> list[str]:
    """Lines and sentences of ``text``, stripped, empty ones dropped."""
    return [part.strip() for part in _SENTENCE_END.split(text) if part.strip()]


def _truncate(text: str, limit: int) -> str:
    """``text`` cut to at most ``limit`` characters, at a word boundary when there is one."""
    if len(text) <= limit:
        return text
    cut = text[:limit]
    space = cut.rfind(" ")
    return (cut[:space] if space > 0 else cut).rstrip()


def extractive_summary(text: str, *, max_tokens: int) -> str:
    """The most keyword-dense sentences of ``text`` within ``max_tokens`` (4 chars a token).

    A sentence scores the sum of its keywords' sentence frequencies over the square root of
    its keyword count; ties keep the earlier sentence. Sentences are taken best first until
    the next one does not fit; if even the best one is over the budget, it is cut at a word
    boundary. Empty text gives ``""``.
    """
    sentences = split_sentences(text)
    if not sentences:
        return ""
    budget = max(1, max_tokens) * CHARS_PER_TOKEN
    keywords = [extract_keywords(sentence) for sentence in sentences]
    frequency = Counter(word for words in keywords for word in words)

    def score(index: int) -> float:
        words = keywords[index]
        return sum(frequency[word] for word in words) / math.sqrt(len(words)) if words else 0.0

    ranked = sorted(range(len(sentences)), key=lambda index: (-score(index), index))
    chosen: list[int] = []
    used = 0
    for index in ranked:
        cost = len(sentences[index]) + (1 if chosen else 0)
        if used + cost > budget:
            break  # never trade a better sentence for a worse one that happens to fit
        chosen.append(index)
        used += cost
    if not chosen:
        return _truncate(sentences[ranked[0]], budget)
    return " ".join(sentences[index] for index in sorted(chosen))


class ExtractiveGenerator:
    """The default text generator, for ``[textgen] provider = "none"``."""

    id = EXTRACTIVE_ID
    model = "extractive-keywords"

    def generate(self, prompt: str, *, max_tokens: int, system: str | None = None) -> str:
        """An :func:`extractive_summary` of ``prompt``; ``system`` is ignored."""
        return extractive_summary(prompt, max_tokens=max_tokens)
