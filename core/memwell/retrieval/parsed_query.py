""":class:`ParsedQuery`: a search's query, cut once to ``query.max_chars``, carrying its parses.

The recall cache (or the backend, when it is called directly) makes one with
:meth:`ParsedQuery.bound`, and the same object travels down the chain to the SQL statement:
through every layer's ``search`` / ``search_many`` (it is a ``str``, so the public signatures and
any backend that reads ``request.query`` as text are unchanged) and into
:class:`~memwell.runtime.backend.SearchRequest`. A layer below does not cut it again.

Every function that parses a query (its keyword terms, its FTS5 query, its ``+`` / ``-`` terms,
its dates, its route, its script) is decorated with :func:`per_query`: given a
:class:`ParsedQuery` it computes its answer once and keeps it on the query, so a search parses
its query once per kind however many stages ask (the builtin backend's keyword search and
coverage, the ranking pipeline, the recall cache). Given a plain ``str`` it computes as before.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, Concatenate, ParamSpec, TypeVar

from memwell.retrieval.query_limit import bound_query

_P = ParamSpec("_P")
_T = TypeVar("_T")


class ParsedQuery(str):
    """A query's text (stripped, at most ``query.max_chars`` characters) with its parses.

    Make one with :meth:`bound`. It compares and hashes as its text; the parses it holds are
    computed from the text alone, so two equal queries have equal parses.
    """

    _parses: dict[tuple[Any, ...], Any]

    def __new__(cls, text: str) -> ParsedQuery:
        query = super().__new__(cls, text)
        query._parses = {}
        return query

    @classmethod
    def bound(cls, query: str, max_chars: int) -> ParsedQuery:
        """``query`` stripped and cut to ``max_chars``
        (:func:`~memwell.retrieval.query_limit.bound_query`); a :class:`ParsedQuery` that
        already fits is returned as it is, with its parses."""
        if isinstance(query, ParsedQuery) and len(query) <= max_chars:
            return query
        return cls(bound_query(query, max_chars))

    def parse(self, key: tuple[Any, ...], compute: Callable[[], _T]) -> _T:
        """The parse named ``key``, computed by ``compute`` the first time it is asked for."""
        try:
            value: _T = self._parses[key]
        except KeyError:
            value = self._parses.setdefault(key, compute())
        return value


def per_query(
    parser: Callable[Concatenate[str, _P], _T],
) -> Callable[Concatenate[str, _P], _T]:
    """``parser`` (a function of a query and options that returns an immutable parse),
    computed once per :class:`ParsedQuery` and options; a plain ``str`` is parsed each call."""

    @functools.wraps(parser)
    def parse(query: str, /, *args: _P.args, **kwargs: _P.kwargs) -> _T:
        if not isinstance(query, ParsedQuery):
            return parser(query, *args, **kwargs)
        key = (parser, args, tuple(sorted(kwargs.items())))
        return query.parse(key, lambda: parser(query, *args, **kwargs))

    return parse
