"""``memwell warm`` and ``memwell compress``."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import TextIO

import click

from memwell.agent.compress_tool import memory_token_counter
from memwell.cli.main import Context, cli, pass_ctx
from memwell.context.compress import compress
from memwell.context.tokens import TokenCounter, counter_for
from memwell.context.transcript import parse_transcript
from memwell.contract.recall_protocols import warm


@cli.command(name="warm")
@pass_ctx
def warm_command(ctx: Context) -> None:
    """Load the index, the embedding model and the caches now (what a new session does)."""
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
