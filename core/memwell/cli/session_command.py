"""``memwell session save``: a finished conversation becomes a dated session note."""

from __future__ import annotations

import json

import click

from memwell.agent.session_capture import read_transcript, save_session
from memwell.cli.main import Context, cli, pass_ctx
from memwell.runtime.factory import open_memory
from memwell.writing import writer


@cli.group()
def session() -> None:
    """Capture conversations as memory notes (the reference's session-memory hook)."""


@session.command(name="save")
@click.argument("transcript", type=click.Path(dir_okay=False))
@click.option("--session-key", help="The agent session key to record (default: unknown).")
@click.option("--session-id", help="Default: the transcript's session record id.")
@click.option("--source", default="cli", show_default=True, help="Where the session ran.")
@click.option(
    "-n",
    "--messages",
    type=click.IntRange(1, 10_000),
    help="Keep the last N messages (default: [session_save] messages, 15).",
)
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON.")
@pass_ctx
def save(
    ctx: Context,
    transcript: str,
    session_key: str | None,
    session_id: str | None,
    source: str,
    messages: int | None,
    as_json: bool,
) -> None:
    """Write the last messages of a JSONL TRANSCRIPT to memory/YYYY-MM-DD-<slug>.md.

    The date is the last message's (UTC); the slug comes from [textgen] when a generator is
    configured, else from the conversation's keywords. Secrets are redacted and the note is
    indexed before this returns. Malformed transcript lines are skipped and counted.
    """
    conversation = read_transcript(transcript)
    settings = ctx.settings(sync={"watch": False, "on_search": False})
    manager = open_memory(ctx.workspace, settings=settings)
    notes = writer(manager, workspace=ctx.workspace, settings=settings, channel="cli")
    result = save_session(
        notes,
        conversation,
        session_key=session_key,
        session_id=session_id,
        source=source,
        message_count=messages,
    )
    if as_json:
        click.echo(json.dumps(result.model_dump(mode="json"), indent=2, ensure_ascii=False))
    else:
        redacted = ", secrets redacted" if result.redacted else ""
        click.echo(
            f"saved {result.path} ({result.messages} of {result.total_messages} messages, "
            f"slug from {result.slug_source}{redacted})"
        )
    if result.skipped_lines:
        plural = "s" if result.skipped_lines != 1 else ""
        click.echo(
            f"warning: skipped {result.skipped_lines} malformed line{plural} of {transcript}",
            err=True,
        )
    for note in result.notes:
        click.echo(f"warning: {note}", err=True)
    if not result.indexed:
        click.echo(f"warning: saved, but not indexed yet: {result.index_error}", err=True)
