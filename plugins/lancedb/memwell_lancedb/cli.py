"""``memwell ltm``: inspect and manage long-term memories from the shell."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import click
from memwell.plugin import CliContext, MemwellError

from .journal import format_timestamp
from .memory import RECALL_LIMIT, Memory

if TYPE_CHECKING:  # the manager imports LanceDB, which takes seconds: only when a command runs
    from .manager import LanceMemoryManager

pass_ctx = click.make_pass_decorator(CliContext)
SEARCH_MIN_SCORE = 0.3


def _open(ctx: CliContext) -> LanceMemoryManager:
    """The workspace's memory opened with the ``lancedb`` backend."""
    from .manager import as_lance_manager

    manager = ctx.open(backend="lancedb")
    lance = as_lance_manager(manager)
    if lance is None:
        reason = getattr(manager, "last_error", None) or "unknown reason"
        raise click.ClickException(f"the lancedb backend is unavailable: {reason}")
    return lance


@contextlib.contextmanager
def _user_errors() -> Iterator[None]:
    """Report memwell and file errors as one ``Error:`` line (exit status 1)."""
    try:
        yield
    except (MemwellError, FileNotFoundError) as exc:
        raise click.ClickException(str(exc)) from exc


def _emit_json(data: Any) -> None:
    click.echo(json.dumps(data, indent=2, ensure_ascii=False))


def _line(memory: Memory, score: float | None = None) -> str:
    text = " ".join(memory.text.split())
    text = text if len(text) <= 80 else text[:77] + "..."
    shown = f"  {score:.2f}" if score is not None else ""
    stamp = format_timestamp(memory.created_at)[:16]
    return f"{memory.id}  {stamp}  [{memory.category}]{shown}  {text}"


@click.group(name="ltm")
def ltm() -> None:
    """Long-term memories of the lancedb backend (list, search, stats, forget, rebuild)."""


@ltm.command(name="list")
@click.option("-n", "--limit", type=click.IntRange(1), default=20, show_default=True)
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@pass_ctx
def list_memories(ctx: CliContext, limit: int, as_json: bool) -> None:
    """List memories, newest first."""
    with _user_errors():
        memories = _open(ctx).memories.list(limit=limit)
    if as_json:
        _emit_json([m.as_dict() for m in memories])
    elif not memories:
        click.echo("no memories")
    else:
        click.echo("\n".join(_line(m) for m in memories))


@ltm.command()
@click.argument("query")
@click.option("-n", "--limit", type=click.IntRange(1, 100), default=RECALL_LIMIT, show_default=True)
@click.option("--min-score", type=click.FloatRange(0.0, 1.0), default=SEARCH_MIN_SCORE)
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@pass_ctx
def search(ctx: CliContext, query: str, limit: int, min_score: float, as_json: bool) -> None:
    """Find the memories most similar to QUERY."""
    with _user_errors():
        hits = _open(ctx).memories.recall(query, limit=limit, min_score=min_score)
    if as_json:
        _emit_json({"query": query, "results": [h.as_dict() for h in hits]})
    elif not hits:
        click.echo("no memories found")
    else:
        click.echo("\n".join(_line(h.memory, h.score) for h in hits))


@ltm.command()
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@pass_ctx
def stats(ctx: CliContext, as_json: bool) -> None:
    """Count memories per category."""
    with _user_errors():
        manager = _open(ctx)
        data = {**manager.memories.stats(), "uri": manager.uri}
        data["journal"] = str(manager.journal.path) if manager.journal is not None else None
    if as_json:
        _emit_json(data)
        return
    click.echo(f"memories:   {data['count']}")
    for category, count in data["categories"].items():
        click.echo(f"  {category:<11} {count}")
    click.echo(f"dims:       {data['dims']}")
    click.echo(f"database:   {data['uri']}")
    click.echo(f"journal:    {data['journal'] or 'off'}")


@ltm.command()
@click.argument("query", required=False)
@click.option("--id", "memory_id", help="Delete the memory with this id.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@pass_ctx
def forget(ctx: CliContext, query: str | None, memory_id: str | None, as_json: bool) -> None:
    """Delete a memory by --id, or by QUERY when exactly one memory clearly matches."""
    if (query is None) == (memory_id is None):
        raise click.UsageError("give either QUERY or --id")
    with _user_errors():
        from .tools import memory_forget

        payload = memory_forget(_open(ctx), query=query, memory_id=memory_id)
    if as_json:
        _emit_json(payload)
        return
    if "error" in payload:
        raise click.ClickException(payload["error"])
    click.echo(payload["text"])


@ltm.command()
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@pass_ctx
def rebuild(ctx: CliContext, as_json: bool) -> None:
    """Recreate the memories table from the Markdown journal (re-embedding every entry)."""
    with _user_errors():
        report = _open(ctx).memories.rebuild_from_journal()
    if as_json:
        _emit_json({"count": report.count, "problems": report.problems})
        return
    click.echo(f"rebuilt {report.count} memories from the journal")
    for problem in report.problems:
        click.echo(f"warning: {problem}", err=True)
