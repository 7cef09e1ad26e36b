"""The Trigger Engine: route a query to the store it asks for, as a ranking prior.

- a how-to ("how do I...", "steps to...", "checklist") favours ``memory/procedures/``;
- a capitalised name ("who is Ines Duarte?") favours its entity page,
  ``memory/graph/entities/<slug>.md``;
- a preference ("always", "never", "prefer", "favourite") favours the vault and ``MEMORY.md``.

A router above this layer (``[query.hybrid] router = "textgen"``, memwell.textgen.router) may
set a :class:`~memwell.retrieval.parsed_query.ParsedQuery`'s route first (:func:`set_route`).

Hits in a favoured file gain ``[query.hybrid] route_boost`` (0.15; 0 turns routing off),
like the date boost: a prior that lifts, never a filter. Paths outside those stores are
never touched, so routing changes nothing for memory that has none of them.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import msgspec

from memwell.contract.layout import ROOT_MEMORY_FILES, VAULT_PREFIX
from memwell.retrieval.candidate import Candidate
from memwell.retrieval.names import name_runs
from memwell.retrieval.parsed_query import ParsedQuery
from memwell.util.slug import clean_slug

PROCEDURES_PREFIX = "memory/procedures/"
ENTITIES_PREFIX = "memory/graph/entities/"
_HOW_TO = re.compile(
    r"\b(?:how (?:do|to|can|should|would)\b|steps? (?:to|for)\b|procedure|checklist|"
    r"runbook|playbook|instructions)",
    re.IGNORECASE,
)
_PREFERENCE = re.compile(
    r"\b(?:always|never|prefers?|preferred|preference|favou?rite|likes?|dislikes?|rather)\b",
    re.IGNORECASE,
)


class Route(msgspec.Struct, frozen=True, kw_only=True):
    """Where a query points: ``kinds`` (``procedure``, ``entity``, ``preference``) and the
    entity pages it names (``memory/graph/entities/<slug>.md``)."""

    kinds: tuple[str, ...] = ()
    entities: tuple[str, ...] = ()

    def favours(self, path: str) -> bool:
        """Whether a hit in ``path`` is in a store this query asks for."""
        if "procedure" in self.kinds and path.startswith(PROCEDURES_PREFIX):
            return True
        if "preference" in self.kinds and (
            path.startswith(VAULT_PREFIX) or path in ROOT_MEMORY_FILES
        ):
            return True
        return path in self.entities

    def to_dict(self) -> dict[str, list[str]]:
        """The route as JSON-ready data (``search --json`` shows it as ``route``)."""
        return {"kinds": list(self.kinds), "entities": list(self.entities)}


_ROUTE_KEY = ("route",)


def route_query(query: str) -> Route:
    """The route set on ``query`` (:func:`set_route`), else :func:`keyword_route`; once per
    :class:`~memwell.retrieval.parsed_query.ParsedQuery`."""
    if isinstance(query, ParsedQuery):
        return query.parse(_ROUTE_KEY, lambda: keyword_route(query))
    return keyword_route(query)


def set_route(query: ParsedQuery, route: Route) -> None:
    """Route ``query`` by ``route`` (a router's answer), unless it has a route already."""
    query.parse(_ROUTE_KEY, lambda: route)


def keyword_route(query: str) -> Route:
    """The :class:`Route` of ``query`` by keyword detection (no model needed)."""
    kinds: list[str] = []
    if _HOW_TO.search(query):
        kinds.append("procedure")
    pages = tuple(
        dict.fromkeys(
            f"{ENTITIES_PREFIX}{slug}.md"
            for slug in (clean_slug(name) for name in name_runs(query))
            if slug
        )
    )
    if pages:
        kinds.append("entity")
    if _PREFERENCE.search(query):
        kinds.append("preference")
    return Route(kinds=tuple(kinds), entities=pages)


def apply_route(items: Sequence[Candidate], query: str, boost: float) -> list[Candidate]:
    """``items`` with ``boost`` added (up to 1) to the hits the query's route favours, in
    the same order (a copy when nothing applies)."""
    route = route_query(query) if boost > 0 and query else Route()
    if not route.kinds:
        return list(items)
    return [
        item.with_score(min(1.0, item.score + boost)) if route.favours(item.path) else item
        for item in items
    ]
