"""``memwell flush-plan``: should the agent flush memories before compaction, and how."""

from __future__ import annotations

import json

import click

from memwell.agent.flush import ContextUsage, FileFlushState, plan_flush, plan_text
from memwell.cli.main import Context, cli, pass_ctx


@cli.command(name="flush-plan")
@click.option("--tokens-used", type=click.IntRange(0), required=True, help="Tokens in context.")
@click.option("--context-window", type=click.IntRange(1), required=True, help="Model window.")
@click.option("--compaction-count", default="0", show_default=True, help="Compaction cycle id.")
@click.option("--transcript-bytes", type=click.IntRange(0), help="Transcript size, if known.")
@click.option("--reserve-tokens", type=click.IntRange(0), help="The host's compaction reserve.")
@click.option("--session-key", default="default", show_default=True, help="The conversation.")
@click.option("--json", "as_json", is_flag=True, help="Print the plan as JSON.")
@pass_ctx
def flush_plan(
    ctx: Context,
    tokens_used: int,
    context_window: int,
    compaction_count: str,
    transcript_bytes: int | None,
    reserve_tokens: int | None,
    session_key: str,
    as_json: bool,
) -> None:
    """Say whether to flush durable memories now (the reference's pre-compaction flush).

    Past the soft threshold ([flush] in memwell.toml) this prints the instruction and the
    target file, once per compaction cycle and session; the cycle is recorded in the index
    directory, so a second call in the same cycle says it was done.
    """
    settings = ctx.settings()
    usage = ContextUsage(
        tokens_used=tokens_used,
        context_window=context_window,
        compaction_count=compaction_count,
        transcript_bytes=transcript_bytes,
        reserve_tokens=reserve_tokens,
    )
    state = FileFlushState.for_workspace(ctx.workspace, settings)
    plan = plan_flush(usage, settings=settings.flush, state=state, session_key=session_key)
    if as_json:
        click.echo(json.dumps(plan.model_dump(mode="json"), indent=2, ensure_ascii=False))
    else:
        click.echo(plan_text(plan))
