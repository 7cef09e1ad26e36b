"""``memwell write`` and ``memwell recent``: record memory from the shell, list recent changes."""

from __future__ import annotations

import json
import sys

import click

from memwell.cli.main import Context, cli, pass_ctx
from memwell.runtime.factory import open_memory
from memwell.writing import MemoryWriter, WriteResult


def _writer(ctx: Context) -> MemoryWriter:
    settings = ctx.settings(sync={"watch": False, "on_search": False})
    memory = open_memory(ctx.workspace, settings=settings)
    return MemoryWriter(memory, ctx.workspace, settings, channel="cli")


def _report(result: WriteResult, as_json: bool) -> None:
    if as_json:
        click.echo(json.dumps(result.model_dump(mode="json"), indent=2, ensure_ascii=False))
    else:
        where = f"{result.path}:{result.start_line}-{result.end_line}"
        redacted = ", secrets redacted" if result.redacted else ""
        click.echo(f"{result.operation} {where} ({result.bytes_written} bytes{redacted})")
        for item in result.superseded:
            verb = "superseded" if item.marked else "would supersede"
            click.echo(f"{verb} {item.path}:{item.line}: {item.text.strip()}")
    if not result.indexed:
        click.echo(f"warning: written, but not indexed yet: {result.index_error}", err=True)
    if result.supersede_error:
        click.echo(f"warning: written, but {result.supersede_error}", err=True)


@cli.command()
@click.argument("text", required=False)
@click.option("-f", "--file", "file", help="Memory file or topic (default: today's daily file).")
@click.option("-H", "--heading", help="Append under this heading (MEMORY.md unless --file).")
@click.option("--create", is_flag=True, help="Create --file as a new file (never overwrites).")
@click.option("--replace", "old", metavar="OLD", help="Replace the one OLD passage in --file.")
@click.option(
    "--supersede",
    "outdated",
    metavar="OLD",
    help="Mark the line holding OLD (in --in) superseded by TEXT, which is appended as usual.",
)
@click.option("--in", "outdated_file", metavar="PATH", help="The file holding --supersede OLD.")
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON.")
@pass_ctx
def write(
    ctx: Context,
    text: str | None,
    file: str | None,
    heading: str | None,
    create: bool,
    old: str | None,
    outdated: str | None,
    outdated_file: str | None,
    as_json: bool,
) -> None:
    """Write TEXT (or stdin) to memory; the index is updated before this returns.

    Appends to memory/YYYY-MM-DD.md by default. --file appends to a topic file, --heading
    under a section, --create makes a new file, --replace OLD swaps one exact passage for TEXT.
    An older line that TEXT states a new value for (a port, owner, date, time, count or
    preference) is marked "(superseded <date> by <path>#L<n>)" ([write] supersede = "auto",
    "suggest" or "off"); --supersede OLD --in PATH marks a line you name. Secrets are
    redacted; [write] in memwell.toml sets the size limit or turns writing off.
    """
    if create and old is not None:
        raise click.UsageError("--create and --replace cannot be combined")
    if (outdated is None) != (outdated_file is None):
        raise click.UsageError("--supersede OLD and --in PATH go together")
    if outdated is not None and (create or old is not None):
        raise click.UsageError("--supersede cannot be combined with --create or --replace")
    if (create or old is not None) and (file is None or heading is not None):
        raise click.UsageError("--create and --replace need --file and take no --heading")
    body = text if text is not None and text != "-" else sys.stdin.read()
    writer = _writer(ctx)
    if create:
        result = writer.create(file or "", body)
    elif old is not None:
        result = writer.replace(file or "", old, body)
    elif outdated is not None:
        result = writer.supersede(outdated_file or "", outdated, body, file=file, heading=heading)
    else:
        result = writer.append(body, file=file, heading=heading)
    _report(result, as_json)


@cli.command()
@click.option("-n", "--limit", type=click.IntRange(1), default=10, show_default=True)
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@pass_ctx
def recent(ctx: Context, limit: int, as_json: bool) -> None:
    """List the memory files changed most recently, newest first."""
    files = _writer(ctx).recent(limit)
    if as_json:
        rows = [f.model_dump(mode="json") for f in files]
        click.echo(json.dumps(rows, indent=2, ensure_ascii=False))
        return
    for f in files:
        stamp = f.modified.strftime("%Y-%m-%d %H:%M:%S UTC")
        click.echo(f"{stamp}  {f.bytes:>8} B  {f.path}")
