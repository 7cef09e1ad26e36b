"""``memwell reflect``: organise memory into entity pages, procedures, decay scores, a log."""

from __future__ import annotations

import json

import click

from memwell.cli.main import Context, cli, pass_ctx


@cli.command()
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON.")
@pass_ctx
def reflect(ctx: Context, as_json: bool) -> None:
    """Build memory/graph/ (entity pages, index, relation types), memory/procedures/,
    memory/meta/decay-scores.json and an entry of memory/meta/reflection-log.md.

    Only what changed is written, and only the part of a generated page between its
    memwell:reflect markers: text you add below the end marker is kept. Every file written
    gets a line in memory/meta/audit.log.
    """
    from memwell.organise import reflect as run_reflect
    from memwell.runtime.factory import open_memory
    from memwell.writing import MemoryWriter

    settings = ctx.settings(sync={"watch": False, "on_search": False})
    manager = open_memory(ctx.workspace, settings=settings)
    result = run_reflect(MemoryWriter(manager, ctx.workspace, settings, channel="cli"))
    if as_json:
        click.echo(json.dumps(result.to_dict(), indent=2, ensure_ascii=False))
    else:
        click.echo(
            f"reflected {result.notes} notes: {result.entities} entities, "
            f"{result.procedures} procedures, {result.edges} edges; "
            f"{len(result.added)} pages added, {len(result.changed)} changed, "
            f"{len(result.retired)} retired"
            + ("" if result.changed_anything else " (nothing changed)")
        )
    if result.extractor_note:
        click.echo(f"warning: {result.extractor_note}", err=True)
    for path in result.left_alone:
        click.echo(f"warning: {path} lost its memwell:reflect markers; left alone", err=True)
    for error in result.audit_errors:
        click.echo(f"warning: {error}", err=True)
    if not result.indexed:
        click.echo(f"warning: written, but not indexed yet: {result.index_error}", err=True)
