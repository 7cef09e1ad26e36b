"""``memwell promote``: copy recalled daily-note snippets that keep coming back into MEMORY.md."""

from __future__ import annotations

import json
import sqlite3

import click

from ..errors import MemwellError
from .main import Context, cli, pass_ctx

_HEADER = (
    f"{'#':>2} {'score':>6} {'freq':>6} {'relev':>6} {'divers':>6} {'recency':>7} "
    f"{'consol':>6} {'concept':>7} {'recalls':>7} {'queries':>7} {'days':>4}  source"
)


@cli.command()
@click.option("--dry-run", is_flag=True, help="Print the ranking with every component.")
@click.option("--limit", type=click.IntRange(0), help="Promote at most this many snippets.")
@click.option("--include-promoted", is_flag=True, help="Rank snippets promoted before too.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@pass_ctx
def promote(
    ctx: Context, dry_run: bool, limit: int | None, include_promoted: bool, as_json: bool
) -> None:
    """Append the snippets recalled most often, across queries and days, to MEMORY.md.

    Candidates are chunks of daily notes (memory/YYYY-MM-DD*.md) that searches returned,
    ranked by the weighted score of [promotion] in memwell.toml (frequency, relevance,
    query diversity, recency, consolidation, concept tags). Each goes under a dated heading
    with its source path:lines; a snippet already in MEMORY.md is never appended again.
    """
    from ..curation.promotion import promote as run_promotion
    from ..curation.promotion import promoted_text
    from ..curation.tracking import RecallTracker

    settings = ctx.settings()
    manager = ctx.open()
    tracker = RecallTracker.for_workspace(ctx.workspace, settings)
    try:
        result = run_promotion(
            manager,
            ctx.workspace,
            settings,
            tracker=tracker,
            dry_run=dry_run,
            limit=limit,
            include_promoted=include_promoted,
            channel="cli",
        )
    except sqlite3.Error as exc:
        raise MemwellError(f"cannot read the recall history {tracker.path}: {exc}") from None
    finally:
        tracker.close()
    if as_json:
        click.echo(json.dumps(result.model_dump(mode="json"), indent=2, ensure_ascii=False))
        return
    if not result.candidates:
        click.echo("no snippet qualifies for promotion yet ([promotion] gates in memwell.toml)")
        return
    if dry_run:
        click.echo(_HEADER)
        for rank, c in enumerate(result.candidates, start=1):
            parts = c.components
            click.echo(
                f"{rank:>2} {c.score:6.3f} {parts['frequency']:6.3f} {parts['relevance']:6.3f} "
                f"{parts['diversity']:6.3f} {parts['recency']:7.3f} "
                f"{parts['consolidation']:6.3f} {parts['conceptual']:7.3f} "
                f"{c.recall_count:>7} {c.unique_queries:>7} {len(c.recall_days):>4}  {c.source}"
            )
            click.echo(f"   {promoted_text(c.snippet)[:96]}")
        click.echo(f"dry run: nothing written to {result.memory_file}")
        return
    for c in result.appended:
        click.echo(f"promoted {c.source} (score {c.score:.3f})")
    for skipped in result.skipped:
        click.echo(f"skipped {skipped.source}: {skipped.reason}")
    click.echo(
        f"{len(result.appended)} snippet(s) appended to {result.memory_file} "
        f"under '## {result.heading}'"
    )
