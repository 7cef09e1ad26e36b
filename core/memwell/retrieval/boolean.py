"""Boolean terms in a query: ``+term`` must occur in a hit, ``-term`` must not.

``deploy checklist +staging -friday`` searches as usual for every word, then keeps only the
hits whose text holds ``staging`` and lacks ``friday`` (whole tokens, case-insensitive, as
the keyword index reads them; ``+"two words"`` needs both). The operators count at the start of
a word that starts with a letter only, so ``e-mail``, ``C++``, ``-3`` and ``+1 nucleosomes``
stay plain text. :func:`compose_query` writes such a query
from ``must`` / ``should`` / ``must_not`` lists, for API callers.

Two layers enforce the terms. The keyword query itself is boolean
(:func:`~memwell.retrieval.fts_query.build_fts_query`: ``(should OR ...) AND must NOT
must_not``), so a backend whose index runs it (the builtin backend's FTS5, capability
``boolean``) retrieves the hits that hold the required terms however far down the plain query
would rank them, and spends no candidate on an excluded one; an excluded term also excludes
its stemmed forms there. Then the filter here runs in the ranking pipeline every backend
shares, on the candidates it retrieved (vector hits too), so every backend returns only hits
that pass :meth:`BooleanTerms.admits`.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from typing import Protocol, TypeVar

import msgspec

from memwell.retrieval.keywords import tokenize
from memwell.retrieval.parsed_query import per_query

_OPERATOR = re.compile(r'(?:^|(?<=\s))([+-])(?:"([^"]+)"|([^\W\d_][^\s]*))')


class BooleanTerms(msgspec.Struct, frozen=True):
    """The required and excluded terms of a query, each as its tokens."""

    must: tuple[tuple[str, ...], ...] = ()
    must_not: tuple[tuple[str, ...], ...] = ()

    def __bool__(self) -> bool:
        return bool(self.must or self.must_not)

    def admits(self, text: str) -> bool:
        """Whether a hit with ``text`` holds every required term and no excluded one."""
        tokens = set(tokenize(text))
        return all(tokens.issuperset(t) for t in self.must) and not any(
            tokens.issuperset(t) for t in self.must_not
        )


@per_query
def parse_boolean(query: str) -> BooleanTerms:
    """The ``+term`` and ``-term`` (or ``+"a phrase"``) operators of ``query``."""
    must: list[tuple[str, ...]] = []
    must_not: list[tuple[str, ...]] = []
    for sign, phrase, word in _OPERATOR.findall(query):
        tokens = tuple(tokenize(phrase or word))
        if tokens:
            (must if sign == "+" else must_not).append(tokens)
    return BooleanTerms(tuple(must), tuple(must_not))


def without_excluded(query: str) -> str:
    """``query`` without its ``-term`` operators (what the keyword query looks for)."""
    return _OPERATOR.sub(lambda m: "" if m.group(1) == "-" else m.group(0), query)


def _quoted(term: str) -> str:
    if not term.strip() or '"' in term:
        raise ValueError(f"a boolean term must be non-blank text without quotes: {term!r}")
    return f'"{term}"' if len(term.split()) > 1 else term


def compose_query(
    should: str = "", *, must: Iterable[str] = (), must_not: Iterable[str] = ()
) -> str:
    """A query string with ``should`` (free text) and the terms as ``+must`` / ``-must_not``.

    Example: ``memory.search(compose_query("deploy", must=["staging"], must_not=["friday"]))``.

    :raises ValueError: a blank term, or one with a double quote.
    """
    parts = [should.strip()] if should.strip() else []
    parts += [f"+{_quoted(t)}" for t in must]
    parts += [f"-{_quoted(t)}" for t in must_not]
    return " ".join(parts)


class _Hit(Protocol):
    @property
    def text(self) -> str: ...


_HitT = TypeVar("_HitT", bound=_Hit)


def apply_boolean(items: Sequence[_HitT], query: str) -> list[_HitT]:
    """``items`` without the hits the query's ``+`` / ``-`` terms rule out (order kept)."""
    terms = parse_boolean(query) if ("+" in query or "-" in query) else BooleanTerms()
    if not terms:
        return list(items)
    return [item for item in items if terms.admits(item.text)]
