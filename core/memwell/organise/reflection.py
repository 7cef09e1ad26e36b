"""``memwell reflect``: build the entity graph, procedures, decay scores and reflection log.

Reads the memory files (never its own pages: :func:`~memwell.organise.notes.read_notes`),
then writes through :meth:`memwell.writing.MemoryWriter.rewrite` (the write rules, the lock,
the audit log) only what changed:

- ``memory/graph/entities/<slug>.md`` per entity named in two notes or more;
- ``memory/graph/index.md`` (registry and edges), ``memory/graph/relations.md`` (edge types);
- ``memory/procedures/<slug>.md`` per how-to;
- ``memory/meta/decay-scores.json``;
- ``memory/meta/reflection-log.md``: one dated entry for a run that changed a page.

A page whose entity or procedure is gone keeps its file (a person may have written in it) and
its owned region says so. A second run on unchanged memory writes nothing.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from datetime import datetime
from pathlib import Path

import msgspec

from memwell.contract.config import MemwellSettings
from memwell.curation.decay_file import SCORES_NAME, SCORES_PATH, encode
from memwell.curation.tracking import SIDECAR_NAME, RecallEntry, RecallTracker
from memwell.organise.decay_scores import decay_scores
from memwell.organise.entities import Entity, extract
from memwell.organise.named import configured_names
from memwell.organise.notes import GENERATED_MARK, read_notes
from memwell.organise.pages import front_matter, merge
from memwell.organise.procedures import find_procedures
from memwell.organise.render import (
    entity_body,
    index_body,
    procedure_body,
    relations_body,
    retired_body,
)
from memwell.registry.plugins import PluginRegistry
from memwell.sources.discovery import MEMORY_DIR, scan_memory_files
from memwell.util.lazy_import import lazy_logger
from memwell.writing.atomic import read_state, replace_file, write_lock
from memwell.writing.audit import META_DIR, meta_file
from memwell.writing.edits import Edit
from memwell.writing.writer import MemoryWriter

GRAPH_DIR = f"{MEMORY_DIR}/graph"
ENTITIES_DIR = f"{GRAPH_DIR}/entities"
PROCEDURES_DIR = f"{MEMORY_DIR}/procedures"
LOG_PATH = f"{META_DIR}/reflection-log.md"

log = lazy_logger(__name__)


class ReflectResult(msgspec.Struct, kw_only=True):
    """What a run found and changed (paths are workspace-relative)."""

    notes: int
    entities: int
    procedures: int
    edges: int
    added: list[str] = msgspec.field(default_factory=list)
    changed: list[str] = msgspec.field(default_factory=list)
    retired: list[str] = msgspec.field(default_factory=list)
    superseded: int = 0
    """Superseded facts shown on entity pages."""
    left_alone: list[str] = msgspec.field(default_factory=list)
    """Generated pages whose markers a person removed: they are theirs now."""
    scores_changed: bool = False
    indexed: bool = True
    index_error: str | None = None
    audit_errors: list[str] = msgspec.field(default_factory=list)
    extractor: str = "offline"
    """Who found the entity names: ``offline``, or the text generator's id with it."""
    extractor_note: str | None = None
    """Why ``[reflect] extractor = "textgen"`` fell back to the offline extractor."""

    @property
    def changed_anything(self) -> bool:
        return bool(self.added or self.changed or self.retired or self.scores_changed)

    def to_dict(self) -> dict[str, object]:
        """The result as JSON-ready data."""
        out: dict[str, object] = msgspec.to_builtins(self)
        return out


def _page(writer: MemoryWriter, path: str, head: str, body: str, result: ReflectResult) -> None:
    def render(current: str | None) -> Edit | None:
        merged = merge(current, head, body)
        if merged is None:
            result.left_alone.append(path)
            return None
        return Edit(*merged)

    written = writer.rewrite(path, render)
    if written is None:
        return
    (result.added if written.created else result.changed).append(path)
    if written.audit_error:
        result.audit_errors.append(written.audit_error)


def _existing_pages(workspace: Path, directory: str) -> list[str]:
    """Generated pages (front matter mark) directly in ``directory``."""
    folder = workspace / directory
    if not folder.is_dir() or folder.is_symlink():
        return []
    found = []
    for entry in sorted(os.scandir(folder), key=lambda e: e.name):
        if entry.is_file(follow_symlinks=False) and entry.name.endswith(".md"):
            with open(entry.path, "rb") as handle:
                head = handle.read(400).decode("utf-8", "replace")
            if head.startswith("---") and GENERATED_MARK in head:
                found.append(f"{directory}/{entry.name}")
    return found


def _recalls(workspace: Path, settings: MemwellSettings) -> list[RecallEntry]:
    sidecar = workspace / settings.index_dir / SIDECAR_NAME
    if not sidecar.is_file():
        return []
    tracker = RecallTracker(sidecar)
    try:
        return tracker.entries()
    finally:
        tracker.close()


def _write_scores(writer: MemoryWriter, data: bytes, result: ReflectResult) -> None:
    path = meta_file(writer.workspace, SCORES_NAME)
    with write_lock(writer.lock_file, writer.settings.write.lock_timeout_seconds):
        state = read_state(path)
        if state.exists and state.data == data:
            return
        replace_file(path, data, state)
        lines = data.count(b"\n")
        edit = Edit(data.decode("utf-8"), 1, lines)
        error = writer.audit("reflect", SCORES_PATH, edit, edit.text)
    result.scores_changed = True
    if error:
        result.audit_errors.append(error)


def _log_entry(result: ReflectResult, when: datetime) -> str:
    stamp = when.strftime("%Y-%m-%d %H:%M %Z").strip()
    lines = [f"## {stamp}", ""]
    for label, paths in (("added", result.added), ("changed", result.changed)):
        if paths:
            lines.append(f"- {label} ({len(paths)}): " + ", ".join(paths))
    if result.retired:
        lines.append(f"- retired ({len(result.retired)}): " + ", ".join(result.retired))
    lines.append(f"- superseded facts shown: {result.superseded}")
    return "\n".join(lines)


def _append_log(writer: MemoryWriter, entry: str) -> None:
    def render(current: str | None) -> Edit:
        base = current if current is not None else front_matter({"kind": "reflection-log"})
        base = base if base.endswith("\n") or not base else base + "\n"
        separator = "\n" if base.strip() else ""
        if current is None:
            base += "# Reflection log\n"
        start = (base + separator).count("\n") + 1
        text = f"{base}{separator}{entry}\n"
        return Edit(text, start, text.count("\n"))

    writer.rewrite(LOG_PATH, render)


def reflect(
    writer: MemoryWriter,
    *,
    clock: Callable[[], datetime] | None = None,
    registry: PluginRegistry | None = None,
) -> ReflectResult:
    """Run the Reflection Engine on the writer's workspace (see the module docstring).

    :param writer: the workspace's writer (its channel goes to the audit log).
    :param clock: the current time (default: now, local time): the log entry's time and the
        day decay scores are computed for.
    :param registry: where ``[reflect] extractor = "textgen"`` finds the ``[textgen]``
        generator (default: the installed plugins).
    :raises WriteRefusedError: writing is disabled.
    :raises ConfigError: ``[textgen] provider`` names no installed generator.
    """
    writer.check_enabled()
    now = (clock or (lambda: datetime.now().astimezone()))()
    workspace, settings = writer.workspace, writer.settings
    notes = read_notes(workspace)
    named = configured_names(notes, settings, workspace, registry)
    if named.note:
        log.warning("memwell: reflect: %s", named.note)
    entities, edges = extract(notes, named.names)
    procedures = find_procedures(notes)
    result = ReflectResult(
        notes=len(notes),
        entities=len(entities),
        procedures=len(procedures),
        edges=len(edges),
        extractor=named.source,
        extractor_note=named.note,
    )
    days = {note.path: note.day for note in notes}
    by_name: dict[str, Entity] = {e.name: e for e in entities}
    wanted: set[str] = set()
    for entity in entities:
        path = f"{ENTITIES_DIR}/{entity.slug}.md"
        wanted.add(path)
        head = front_matter({"kind": "entity", "name": entity.name, "type": entity.kind})
        result.superseded += sum(f.superseded for f in entity.facts)
        _page(writer, path, head, entity_body(entity, edges, by_name, days), result)
    for procedure in procedures:
        path = f"{PROCEDURES_DIR}/{procedure.slug}.md"
        wanted.add(path)
        head = front_matter({"kind": "procedure", "title": procedure.title})
        _page(writer, path, head, procedure_body(procedure), result)
    graph_head = front_matter({"kind": "graph-index"})
    _page(writer, f"{GRAPH_DIR}/index.md", graph_head, index_body(entities, edges), result)
    relations_head = front_matter({"kind": "relation-types"})
    _page(writer, f"{GRAPH_DIR}/relations.md", relations_head, relations_body(edges), result)
    for directory in (ENTITIES_DIR, PROCEDURES_DIR):
        for path in _existing_pages(workspace, directory):
            if path not in wanted:
                before = len(result.changed)
                _page(writer, path, front_matter({"kind": "retired"}), retired_body(path), result)
                result.retired.extend(result.changed[before:])
                del result.changed[before:]
    scores = decay_scores(
        [f for f in scan_memory_files(workspace) if not f.path.startswith(f"{META_DIR}/")],
        _recalls(workspace, settings),
        today=now.date(),
        half_life_days=settings.query.hybrid.temporal_decay.half_life_days,
    )
    _write_scores(writer, encode(scores), result)
    if result.added or result.changed or result.retired:
        _append_log(writer, _log_entry(result, now))
    result.indexed, result.index_error = writer.sync() if result.changed_anything else (True, None)
    return result
