"""The injection budget: how many characters of recalled memory reach the model.

``query.max_injected_chars`` (4000, the reference's default) bounds the ``memory_search``
tool payload and the auto-recall block of every backend: whole snippets first, best first,
then the next snippet cut at a line boundary to what is left; the caller says it truncated.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

DEFAULT_MAX_INJECTED_CHARS = 4000


def cut_at_line(text: str, limit: int) -> str:
    """The longest prefix of whole lines of ``text`` within ``limit`` characters (trailing
    blank lines dropped); the first line cut to ``limit`` when not even it fits."""
    if len(text) <= limit:
        return text
    if limit <= 0:
        return ""
    head = text[: limit + 1]
    end = head.rfind("\n")
    kept = head[:end].rstrip() if end > 0 else ""
    return kept or text[:limit].rstrip()


@dataclass(frozen=True)
class Fitted:
    """Snippets within a budget: ``texts`` (a prefix of the input, the last maybe cut),
    whether anything was cut or dropped, and the characters used."""

    texts: list[str]
    truncated: bool
    chars: int


def fit_texts(texts: Sequence[str], max_chars: int) -> Fitted:
    """Keep whole ``texts`` in order while they fit in ``max_chars``; cut the first one that
    does not at a line boundary (dropped when nothing of it fits) and drop the rest."""
    kept: list[str] = []
    used = 0
    for text in texts:
        if used + len(text) <= max_chars:
            kept.append(text)
            used += len(text)
            continue
        part = cut_at_line(text, max_chars - used)
        if part:
            kept.append(part)
            used += len(part)
        return Fitted(kept, True, used)
    return Fitted(kept, False, used)


def budget_of(manager: object) -> int:
    """``query.max_injected_chars`` of ``manager``'s settings, else the default."""
    settings = getattr(manager, "settings", None)
    query = getattr(settings, "query", None)
    value = getattr(query, "max_injected_chars", None)
    return value if isinstance(value, int) and value > 0 else DEFAULT_MAX_INJECTED_CHARS
