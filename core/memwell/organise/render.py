"""The Markdown of the graph and procedure pages (the owned region's body and front matter)."""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Sequence
from datetime import date

from memwell.organise.entities import RELATION_TYPES, Edge, Entity, Fact
from memwell.organise.procedures import Procedure
from memwell.retrieval.snippets import format_citation

MAX_FACTS = 50
"""Current facts listed on an entity page (newest notes first); older ones are counted."""
MAX_RELATIONS = 30
MAX_INDEX_EDGES = 500


def _cite(path: str, first: int, last: int | None = None) -> str:
    return format_citation(path, first, first if last is None else last)


def _newest_first(facts: Sequence[Fact], days: dict[str, date | None]) -> list[Fact]:
    ordinal = {path: (day.toordinal() if day else 0) for path, day in days.items()}
    return sorted(facts, key=lambda f: (-ordinal.get(f.path, 0), f.path, f.line))


def _link(entity: Entity, prefix: str = "") -> str:
    return f"[{entity.name}]({prefix}{entity.slug}.md)"


def entity_body(
    entity: Entity, edges: Sequence[Edge], by_name: dict[str, Entity], days: dict[str, date | None]
) -> str:
    """An entity page's owned region: its facts, superseded facts and relations."""
    facts = _newest_first(entity.facts, days)
    current = [f for f in facts if not f.superseded]
    old = [f for f in facts if f.superseded]
    notes = len(entity.notes)
    lines = [f"# {entity.name}", "", f"{entity.kind.capitalize()}, named in {notes} notes.", ""]
    lines += ["## Facts", ""]
    lines += [f"- {f.text} ({_cite(f.path, f.line)})" for f in current[:MAX_FACTS]]
    if len(current) > MAX_FACTS:
        lines.append(f"- … {len(current) - MAX_FACTS} older facts not listed")
    if old:
        lines += ["", "## Superseded", ""]
        lines += [f"- superseded: {f.text} ({_cite(f.path, f.line)})" for f in old[:MAX_FACTS]]
    relations = _relations(entity, edges, by_name)
    if relations:
        lines += ["", "## Relations", "", *relations]
    return "\n".join(lines)


def _relations(entity: Entity, edges: Sequence[Edge], by_name: dict[str, Entity]) -> list[str]:
    grouped: dict[tuple[str, str, str], list[Edge]] = defaultdict(list)
    for edge in edges:
        if edge.source == entity.name:
            grouped[("→", edge.kind, edge.target)].append(edge)
        elif edge.target == entity.name:
            grouped[("←", edge.kind, edge.source)].append(edge)
    ranked = sorted(grouped.items(), key=lambda item: (-len(item[1]), item[0]))
    out = []
    for (arrow, kind, other), cited in ranked[:MAX_RELATIONS]:
        first = min(cited, key=lambda e: (e.path, e.line))
        times = f"{len(cited)}×, " if len(cited) > 1 else ""
        link = _link(by_name[other])
        out.append(f"- {kind} {arrow} {link} ({times}{_cite(first.path, first.line)})")
    return out


def index_body(entities: Sequence[Entity], edges: Sequence[Edge]) -> str:
    """``memory/graph/index.md``: the registry of entities and the edges among them."""
    by_name = {e.name: e for e in entities}
    counted = Counter((e.source, e.kind, e.target) for e in edges)
    lines = [
        "# Entity graph",
        "",
        f"{len(entities)} entities, {len(counted)} edges. Edge types: [relations](relations.md).",
        "",
        "## Entities",
        "",
        "| Entity | Type | Notes | Facts |",
        "|---|---|---|---|",
    ]
    for e in entities:
        lines.append(f"| {_link(e, 'entities/')} | {e.kind} | {len(e.notes)} | {len(e.facts)} |")
    ranked = sorted(counted.items(), key=lambda item: (-item[1], item[0]))
    if ranked:
        lines += ["", "## Edges", ""]
        for (source, kind, target), count in ranked[:MAX_INDEX_EDGES]:
            left, right = _link(by_name[source], "entities/"), _link(by_name[target], "entities/")
            lines.append(f"- {left} —{kind}→ {right} ({count})")
        if len(ranked) > MAX_INDEX_EDGES:
            lines.append(f"- … {len(ranked) - MAX_INDEX_EDGES} rarer edges not listed")
    return "\n".join(lines)


def relations_body(edges: Sequence[Edge]) -> str:
    """``memory/graph/relations.md``: the edge types, what they mean, how many edges."""
    counts = Counter(e.kind for e in edges)
    lines = ["# Relation types", "", "| Type | Meaning | Edges |", "|---|---|---|"]
    lines += [
        f"| {kind} | {meaning} | {counts[kind]} |" for kind, meaning in RELATION_TYPES.items()
    ]
    return "\n".join(lines)


def procedure_body(procedure: Procedure) -> str:
    """A procedure page's owned region: the title, its sources, the steps verbatim."""
    sources = ", ".join(_cite(s.path, s.start_line, s.end_line) for s in procedure.sources)
    return "\n".join([f"# {procedure.title}", "", f"Source: {sources}", "", *procedure.steps])


def retired_body(name: str) -> str:
    """The owned region of a page whose entity or procedure is no longer found."""
    return f"# {name}\n\nNo longer found in the notes (kept for the text written below)."
