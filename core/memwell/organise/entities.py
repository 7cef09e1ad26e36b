"""Entities named in notes, found without an LLM, with the facts and relations about them.

A name is a run of capitalised words (``Ines Duarte``, ``Project Atlas``, ``PostgreSQL``) or an
explicit ``[[wiki link]]``. Sentence-initial capitals are ambiguous (``Deploys go out...``):
a run at the start of a sentence counts only when the same name also appears mid-sentence
somewhere (the words after a run's first word count as mid-sentence: ``Ask Mirela``), so
ordinary words that open sentences are not taken for names. Stop words, weekdays
and months split runs and are never names. An entity is kept when it is named in at least
:data:`MIN_NOTES` notes.

Each line naming an entity is one of its facts (cited ``path#Lx``); a line with a supersession
marker (:func:`~memwell.retrieval.supersede_marker.is_superseded`) is a superseded fact. Two
entities named on one line are related: by the verb between them when it is a known one (``works
on``, ``leads``, ``uses``...), else ``mentioned_with``. The type (person, project, system, place) is
voted by cue words around the mentions, ``other`` when none speaks.

Names a text generator found in a note (:mod:`memwell.organise.named`) are mentions too,
wherever they occur in that note and no offline mention covers them, and count as seen
mid-sentence (``kubectl``, or ``Zanzibar`` opening a sentence).
"""

from __future__ import annotations

import itertools
import re
from collections import Counter, defaultdict
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field

from memwell.organise.notes import Note, unique_slug
from memwell.retrieval.names import Mention, name_mentions
from memwell.retrieval.supersede_marker import is_superseded

MIN_NOTES = 2
"""An entity is named in at least this many notes."""

_LINK = re.compile(r"\[\[([^\]|#\n]{2,80})(?:[|#][^\]\n]*)?\]\]")
_LINE_MARKER = re.compile(r"^\s*(?:>\s*)*(?:#{1,6}\s+|[-*+]\s+(?:\[[ xX]\]\s+)?|\d+[.)]\s+)?")

_TYPE_CUES: dict[str, tuple[re.Pattern[str], re.Pattern[str]]] = {
    # (cue right before the name, cue right after it), lowercase text
    "person": (
        re.compile(r"\b(?:with|met|asked|told|thanks|cc|by|ask|ping|dr|mr|ms|mrs)\s+$"),
        re.compile(
            r"^(?:'s\b|’s\b|\s+(?:said|says|asked|wants|prefers|thinks|joined|leads|owns|"
            r"works|agreed|suggested|mentioned|is on leave|will|likes|reports))"
        ),
    ),
    "project": (
        re.compile(r"\b(?:project|initiative|epic|milestone)\s+$"),
        re.compile(r"^\s+(?:project|initiative|epic|milestone|launch|roadmap)\b"),
    ),
    "system": (
        re.compile(r"\b(?:service|server|database|library|tool|the api|deploy to|runs on)\s+$"),
        re.compile(
            r"^\s+(?:service|server|database|db|api|cluster|instance|library|app|pipeline|"
            r"queue|bucket|repo|repository)\b"
        ),
    ),
    "place": (
        re.compile(
            r"\b(?:lives in|based in|moved to|office in|trip to|flew to|travel to|from|visit|"
            r"visiting|located in)\s+$"
        ),
        re.compile(r"^\s+(?:office|city|airport|campus|hq)\b"),
    ),
}
_SYSTEM_SHAPE = re.compile(r"^(?:[A-Z0-9]{2,}|.*[a-z][A-Z].*|.*\d.*)$")

RELATION_TYPES: dict[str, str] = {
    "works_on": "a person works on a project or system",
    "works_at": "works at or for an organisation or place",
    "leads": "leads, owns, runs or manages",
    "uses": "uses, runs on or depends on",
    "reports_to": "reports to",
    "located_in": "lives in, is based in or moved to",
    "part_of": "is part of or belongs to",
    "replaces": "replaces or replaced",
    "mentioned_with": "named together on one line, no known verb between",
}
"""Edge types and what they mean (``memory/graph/relations.md``)."""
_RELATION_VERBS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("works_on", re.compile(r"\bwork(?:s|ed|ing)? on\b")),
    ("works_at", re.compile(r"\bwork(?:s|ed|ing)? (?:at|for)\b")),
    ("reports_to", re.compile(r"\breport(?:s|ed|ing)? to\b")),
    ("located_in", re.compile(r"\b(?:lives? in|based in|moved to|located in)\b")),
    ("part_of", re.compile(r"\b(?:part of|belongs? to)\b")),
    ("replaces", re.compile(r"\breplac(?:es|ed|ing)\b")),
    ("leads", re.compile(r"\b(?:leads?|led|owns?|runs|ran|manages?|managed)\b")),
    ("uses", re.compile(r"\b(?:uses?|used|depends? on|runs on|built on)\b")),
)


@dataclass(frozen=True)
class Fact:
    """A line naming an entity: the note, the line (1-based), its text, superseded or not."""

    path: str
    line: int
    text: str
    superseded: bool


@dataclass(frozen=True)
class Edge:
    """A relation ``source --kind--> target``, cited by the line that states it."""

    source: str
    kind: str
    target: str
    path: str
    line: int


@dataclass
class Entity:
    """An entity: its name, page slug, type, the notes naming it, its facts."""

    name: str
    slug: str = ""
    kind: str = "other"
    notes: set[str] = field(default_factory=set)
    facts: list[Fact] = field(default_factory=list)


def _mentions(text: str) -> Iterator[Mention]:
    body_start = _LINE_MARKER.match(text)
    offset = body_start.end() if body_start else 0
    for link in _LINK.finditer(text):
        yield Mention(link.group(1).strip(), link.start(), link.end(), False)
    linked = [(m.start(), m.end()) for m in _LINK.finditer(text)]
    for mention in name_mentions(text[offset:]):
        start, end = mention.start + offset, mention.end + offset
        if any(a <= start < b for a, b in linked):
            continue
        yield Mention(mention.name, start, end, mention.initial)


def _named(line: str, pattern: re.Pattern[str] | None, found: list[Mention]) -> list[Mention]:
    """``found`` with the generator's names (``pattern``) in ``line`` that no mention covers."""
    if pattern is None:
        return found
    extra = [
        Mention(match.group(), match.start(), match.end(), False)
        for match in pattern.finditer(line)
        if not any(m.start < match.end() and match.start() < m.end for m in found)
    ]
    return found + extra


def _names_pattern(names: Sequence[str]) -> re.Pattern[str] | None:
    """Any of ``names`` as whole words, the longest first."""
    if not names:
        return None
    ordered = sorted(set(names), key=lambda name: (-len(name), name))
    return re.compile(r"(?<!\w)(?:" + "|".join(map(re.escape, ordered)) + r")(?!\w)")


def _mid_sentence_names(mentions: Iterable[Mention]) -> Iterator[str]:
    """Names not at a sentence start: whole runs, and what follows a run's first word
    (``Ask Mirela`` names ``Mirela``)."""
    for mention in mentions:
        if not mention.initial:
            yield mention.name
        elif " " in mention.name:
            yield mention.name.split(" ", 1)[1]


def _resolve(mention: Mention, known: set[str]) -> Mention | None:
    """A sentence-initial run: itself if known mid-sentence, else its longest known tail."""
    if not mention.initial or mention.name in known:
        return mention
    words = mention.name.split(" ")
    for cut in range(1, len(words)):
        tail = " ".join(words[cut:])
        if tail in known:
            start = mention.end - len(tail)
            return Mention(tail, start, mention.end, False)
    return None


def _vote_kind(name: str, votes: Counter[str]) -> str:
    if votes:
        best = max(sorted(votes), key=lambda kind: votes[kind])
        return best
    return "system" if _SYSTEM_SHAPE.match(name) and " " not in name else "other"


def _cue_votes(text: str, start: int, end: int) -> Iterable[str]:
    before, after = text[max(0, start - 24) : start].lower(), text[end : end + 24].lower()
    for kind, (left, right) in _TYPE_CUES.items():
        if left.search(before) or right.search(after):
            yield kind


def _relation(between: str) -> str:
    lowered = between.lower()
    for kind, verb in _RELATION_VERBS:
        if verb.search(lowered):
            return kind
    return "mentioned_with"


def fact_text(line: str) -> str:
    """The fact a line states: the line without its list or heading marker, trimmed."""
    marker = _LINE_MARKER.match(line)
    return line[marker.end() if marker else 0 :].strip()


def extract(
    notes: Sequence[Note], named: Mapping[str, Sequence[str]] | None = None
) -> tuple[list[Entity], list[Edge]]:
    """The entities named in at least :data:`MIN_NOTES` of ``notes``, sorted by name, with
    their facts (in note and line order), and the edges among them.

    :param named: names a text generator found, per note path (see the module docstring).
    """
    found: list[tuple[Note, int, str, list[Mention]]] = []
    named = named or {}
    known: set[str] = {name for names in named.values() for name in names}
    for note in notes:
        pattern = _names_pattern(named.get(note.path, ()))
        for index, line in enumerate(note.lines):
            if not line.strip():
                continue
            mentions = _named(line, pattern, list(_mentions(line)))
            if mentions:
                found.append((note, index + 1, line, mentions))
                known.update(_mid_sentence_names(mentions))
    entities: dict[str, Entity] = {}
    votes: dict[str, Counter[str]] = defaultdict(Counter)
    per_line: list[tuple[Note, int, str, list[Mention]]] = []
    for note, number, line, mentions in found:
        resolved = [r for r in (_resolve(m, known) for m in mentions) if r is not None]
        for mention in resolved:
            entity = entities.setdefault(mention.name, Entity(mention.name))
            entity.notes.add(note.path)
        if resolved:
            per_line.append((note, number, line, resolved))
    kept = {name: e for name, e in entities.items() if len(e.notes) >= MIN_NOTES}
    edges: list[Edge] = []
    for note, number, line, mentions in per_line:
        names = [m for m in mentions if m.name in kept]
        seen: set[str] = set()
        for mention in names:
            for kind in _cue_votes(line, mention.start, mention.end):
                votes[mention.name][kind] += 1
            if mention.name not in seen:
                seen.add(mention.name)
                text = fact_text(line)
                fact = Fact(note.path, number, text, is_superseded(line))
                kept[mention.name].facts.append(fact)
        ordered = sorted(names, key=lambda m: m.start)
        for left, right in itertools.pairwise(ordered):
            if left.name != right.name:
                kind = _relation(line[left.end : right.start])
                edges.append(Edge(left.name, kind, right.name, note.path, number))
    slugs: set[str] = set()
    for name in sorted(kept):
        entity = kept[name]
        entity.kind = _vote_kind(name, votes[name])
        entity.slug = unique_slug(name, slugs, "entity")
    return [kept[name] for name in sorted(kept)], edges
