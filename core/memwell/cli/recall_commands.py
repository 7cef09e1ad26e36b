"""``memwell warm`` and ``memwell compress``."""

from __future__ import annotations

import json
import time
from datetime import datetime
from pathlib import Path
from typing import TextIO

import click

from memwell.agent.compress_tool import memory_token_counter
from memwell.cli.main import Context, cli, pass_ctx
from memwell.context.compress import compress
from memwell.context.tokens import TokenCounter, counter_for
from memwell.context.transcript import parse_transcript
from memwell.contract.errors import MemwellError
from memwell.contract.recall_protocols import warm
from memwell.recall.warmup import PERIODS, period_of


@cli.command(name="warm")
@click.option(
    "--for",
    "period",
    type=click.Choice([*PERIODS, "now"]),
    help="Also answer into the recall cache the queries this part of the day usually asks "
    "(learned from the recall history; 'now': the current part).",
)
@pass_ctx
def warm_command(ctx: Context, period: str | None) -> None:
    """Load the index, the embedding model and the caches now (what a new session does).

    The recall cache lives in the process: --for fills it for this process and shows what a
    long-running one (memwell mcp, an agent using the Python API) would load.
    """
    manager = ctx.open()
    manager.sync(reason="warm")
    started = time.perf_counter()
    warm(manager)
    millis = (time.perf_counter() - started) * 1000
    status = manager.status()
    click.echo(
        f"warm in {millis:.0f} ms: {status.chunks} chunks ({status.search_mode}, provider "
        f"{status.provider}{', model ' + status.model if status.model else ''})"
    )
    if period is None:
        return
    from memwell.recall.manager import RecallCachedManager

    if not isinstance(manager, RecallCachedManager):
        raise MemwellError("time-of-day warm-up needs the recall cache of open_memory")
    chosen = period_of(datetime.now().astimezone()) if period == "now" else period
    done = manager.warm_for(chosen)
    click.echo(
        f"{done.period}: {len(done.queries)} usual queries, {done.cached} answers cached "
        f"in {done.millis:.0f} ms"
    )
    for usual in done.queries:
        click.echo(f"  {usual.query}  (asked on {usual.days} days, {usual.times} times)")
    if not manager.config.query_log:
        click.echo(
            "note: the query log is off, so no new searches are learned from; set "
            "[cache.recall] query_log = true to learn what each part of the day asks",
            err=True,
        )


def _counter(ctx: Context, tokenizer: Path | None) -> TokenCounter:
    if tokenizer is not None:
        try:
            return counter_for(None, tokenizer)
        except ValueError as exc:
            raise click.BadParameter(str(exc), param_hint="--tokenizer") from None
    return memory_token_counter(ctx.open())


@cli.command(name="compress")
@click.argument("transcript", type=click.File("r", encoding="utf-8"))
@click.option("--budget", type=click.IntRange(1), required=True, help="Tokens the result may use.")
@click.option(
    "--tokenizer",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="A tokenizer.json to count with (default: the embedding model's, else an estimate).",
)
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@pass_ctx
def compress_command(
    ctx: Context, transcript: TextIO, budget: int, tokenizer: Path | None, as_json: bool
) -> None:
    """Fit a JSONL transcript (``-`` for stdin) into a token budget and print the result."""
    turns = parse_transcript(transcript.read())
    if not turns:
        raise click.UsageError("the transcript has no messages")
    result = compress(turns, budget, counter=_counter(ctx, tokenizer))
    if as_json:
        click.echo(json.dumps(result.to_dict(), indent=2, ensure_ascii=False))
        return
    click.echo(
        f"level {result.level}: usage {result.usage:.2f}, {result.tokens_before} -> "
        f"{result.tokens_after} tokens of {budget} ({result.tokenizer})",
        err=True,
    )
    for note in result.notes:
        click.echo(f"note: {note}", err=True)
    for turn in result.turns:
        click.echo(f"{turn.role}: {turn.content}\n")
