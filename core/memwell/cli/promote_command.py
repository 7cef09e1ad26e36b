"""``memwell promote``: copy recalled daily-note snippets that keep coming back into MEMORY.md."""

from __future__ import annotations

import json
import sqlite3
from typing import TYPE_CHECKING

import click

from memwell.cli.main import Context, cli, pass_ctx
from memwell.contract.errors import MemwellError

if TYPE_CHECKING:
    from memwell.curation.promotion import PromotionResult

_HEADER = (
    f"{'#':>2} {'score':>6} {'freq':>6} {'relev':>6} {'divers':>6} {'recency':>7} "
    f"{'consol':>6} {'concept':>7} {'recalls':>7} {'queries':>7} {'days':>4}  source"
)


@cli.command()
@click.option(
    "--dry-run", is_flag=True, help="Print the ranking and exactly the lines it would write."
)
@click.option(
    "--undo", is_flag=True, help="Restore MEMORY.md to its bytes before the last promotion."
)
@click.option("--limit", type=click.IntRange(0), help="Promote at most this many snippets.")
@click.option("--include-promoted", is_flag=True, help="Rank snippets promoted before too.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@pass_ctx
def promote(
    ctx: Context,
    dry_run: bool,
    undo: bool,
    limit: int | None,
    include_promoted: bool,
    as_json: bool,
) -> None:
    """Append the lines recalled most often, across queries and days, to MEMORY.md.

    Candidates are chunks of daily notes (memory/YYYY-MM-DD*.md) that searches returned,
    ranked by the weighted score of [promotion] in memwell.toml (frequency, relevance,
    query diversity, recency, consolidation, concept tags). Of each, only the lines that
    searches matched go under a dated heading, one bullet per source line; sources and
    scores stay in the index directory. A line MEMORY.md already says is never appended
    again; --undo takes the last promotion back, byte for byte.
    """
    from memwell.curation.promotion import promote as run_promotion
    from memwell.curation.promotion import promoted_text, undo_promotion
    from memwell.curation.tracking import RecallTracker

    if undo and dry_run:
        raise click.UsageError("--undo and --dry-run cannot be combined")
    settings = ctx.settings()
    manager = ctx.open()
    tracker = RecallTracker.for_workspace(ctx.workspace, settings)
    if undo:
        try:
            undone = undo_promotion(manager, ctx.workspace, settings, tracker=tracker)
        finally:
            tracker.close()
        if as_json:
            click.echo(json.dumps(undone.model_dump(mode="json"), indent=2, ensure_ascii=False))
            return
        what = "removed" if undone.removed else "restored"
        click.echo(
            f"{what} {undone.memory_file} as it was before the promotion of "
            f"{undone.promoted_at} ({len(undone.lines)} line(s) taken out)"
        )
        return
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
    if not result.candidates and not result.lines:
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
        _lines(result, f"dry run: nothing written; these lines would go to {result.memory_file}")
        return
    for skipped in result.skipped:
        click.echo(f"skipped {skipped.source}: {skipped.reason}")
    _lines(result, f"appended to {result.memory_file} (memwell promote --undo takes them back)")


def _lines(result: PromotionResult, title: str) -> None:
    """The exact lines, then where each came from."""
    if not result.lines:
        click.echo(f"no new line for {result.memory_file}: every qualified line is in it already")
        return
    click.echo(f"{title} under '## {result.heading}':")
    for line in result.lines:
        click.echo(line.text)
    click.echo("from:")
    for line in result.lines:
        click.echo(
            f"  {line.source} (score {line.score:.3f}; the line matched {line.recalls} searches "
            f"by {line.queries} distinct queries)"
        )
