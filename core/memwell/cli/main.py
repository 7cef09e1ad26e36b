"""``memwell``: index, search and inspect Markdown memory from the shell.

User mistakes print one ``error:`` line and exit with status 2; unexpected failures print one
line and exit with status 1 (set ``MEMWELL_DEBUG=1`` for a traceback).
"""

from __future__ import annotations

import json
import logging
import os
import sys
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TypeVar

import click

from ..config import MemwellSettings, load_settings
from ..errors import MemwellError
from ..factory import open_memory, resolve_workspace
from ..manager import MemorySearchManager
from ..models import MemoryStatus, SyncProgress
from ..plugins import get_registry
from .diagnostics import FAILED, doctor_report, plugin_rows, report_failed, workspace_report

F = TypeVar("F", bound=Callable[..., Any])


class Context:
    """Global options shared by every subcommand."""

    def __init__(
        self,
        workspace: str | None,
        config: str | None,
        backend: str | None,
        provider: str | None,
    ) -> None:
        self.workspace_arg = workspace
        self.config = Path(config) if config else None
        self.overrides: dict[str, Any] = {}
        if backend:
            self.overrides["backend"] = backend
        if provider:
            self.overrides["provider"] = provider

    @property
    def workspace(self) -> Path:
        return resolve_workspace(self.workspace_arg)

    def settings(self, **extra: Any) -> MemwellSettings:
        return self.settings_for(self.workspace, {**self.overrides, **extra})

    def settings_for(self, workspace: Path, overrides: dict[str, Any]) -> MemwellSettings:
        """Layered settings for ``workspace`` with ``overrides`` on top."""
        return load_settings(
            workspace, config_file=self.config, overrides=overrides, registry=get_registry()
        )

    def open(self, *, watch: bool = False, **extra: Any) -> MemorySearchManager:
        """Open the workspace's memory; one-shot commands run without a watcher."""
        sync = {"sync": {"watch": watch, "on_search": False}} if not watch else {}
        return open_memory(self.workspace, settings=self.settings(**sync, **extra))


pass_ctx = click.make_pass_decorator(Context)


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.option(
    "-w",
    "--workspace",
    envvar="MEMWELL_WORKSPACE",
    help="Workspace directory (default: current directory).",
)
@click.option("--config", "config", type=click.Path(dir_okay=False), help="Config file to use.")
@click.option("--backend", help="Backend name (overrides the config).")
@click.option("--provider", help="Embedding provider id, or 'none' for keyword-only mode.")
@click.option("-v", "--verbose", is_flag=True, help="Log what memwell does.")
@click.version_option(package_name="memwell")
@click.pass_context
def cli(
    ctx: click.Context,
    workspace: str | None,
    config: str | None,
    backend: str | None,
    provider: str | None,
    verbose: bool,
) -> None:
    """Markdown-first memory search for AI agents."""
    logging.basicConfig(
        level=logging.INFO if verbose else logging.WARNING,
        format="memwell: %(message)s",
        stream=sys.stderr,
    )
    ctx.obj = Context(workspace, config, backend, provider)


def _emit_json(data: Any) -> None:
    click.echo(json.dumps(data, indent=2, ensure_ascii=False, default=str))


@cli.command()
@click.option("--force", is_flag=True, help="Rebuild the whole index.")
@pass_ctx
def index(ctx: Context, force: bool) -> None:
    """Index the workspace's Markdown memory (incremental unless --force)."""
    manager = ctx.open()
    bar: Any = None

    def progress(p: SyncProgress) -> None:
        nonlocal bar
        if p.total == 0:
            return
        if bar is None:
            bar = click.progressbar(length=p.total, label="indexing", file=sys.stderr)
            bar.__enter__()
        bar.update(p.completed - bar.pos)

    try:
        manager.sync(reason="cli", force=force, progress=progress)
    finally:
        if bar is not None:
            bar.__exit__(None, None, None)
    status = manager.status()
    click.echo(
        f"indexed {status.files} files, {status.chunks} chunks "
        f"({status.search_mode}, provider {status.provider}"
        f"{', model ' + status.model if status.model else ''})"
    )


@cli.command()
@click.argument("query")
@click.option("-n", "--max-results", type=click.IntRange(1, 1000), help="Results to return.")
@click.option("--min-score", type=click.FloatRange(0.0, 1.0), help="Minimum score.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.option("--no-sync", is_flag=True, help="Do not look for changed files first.")
@pass_ctx
def search(
    ctx: Context,
    query: str,
    max_results: int | None,
    min_score: float | None,
    as_json: bool,
    no_sync: bool,
) -> None:
    """Search memory; results carry file and line provenance."""
    manager = ctx.open()
    if not no_sync:
        manager.sync(reason="search")
    results = manager.search(query, max_results=max_results, min_score=min_score)
    if as_json:
        _emit_json({"query": query, "results": [r.model_dump() for r in results]})
        return
    if not results:
        click.echo("no results")
        return
    for hit in results:
        click.secho(f"{hit.path}:{hit.start_line}-{hit.end_line}  score {hit.score:.3f}", bold=True)
        for line in hit.snippet.splitlines()[:8]:
            click.echo(f"    {line}")
        click.echo()


@cli.command()
@click.argument("path")
@click.option("--from", "from_line", type=click.IntRange(1), help="First line (1-based).")
@click.option("--lines", type=click.IntRange(1), help="Number of lines.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@pass_ctx
def get(ctx: Context, path: str, from_line: int | None, lines: int | None, as_json: bool) -> None:
    """Print lines of a memory file (safe read: memory files only)."""
    manager = ctx.open()
    result = manager.read_file(path, from_line=from_line, lines=lines)
    if as_json:
        _emit_json(result.model_dump())
    else:
        click.echo(result.text)


def _status_lines(status: MemoryStatus) -> list[str]:
    lines = [
        f"workspace:  {status.workspace_dir}",
        f"backend:    {status.backend}",
        f"provider:   {status.provider} (requested: {status.requested_provider})",
        f"model:      {status.model}",
        f"mode:       {status.search_mode}",
        f"files:      {status.files}",
        f"chunks:     {status.chunks}",
    ]
    if status.vectors is not None:
        ok = "ok" if status.integrity_ok else "MISMATCH"
        lines.append(f"vectors:    {status.vectors} ({ok})")
    if status.vector is not None:
        vec = status.vector
        engine = vec.engine or "-"
        extra = f"; sqlite-vec: {vec.load_error}" if vec.load_error else ""
        lines.append(f"vector:     engine {engine}, dims {vec.dims}{extra}")
    if status.fts is not None:
        lines.append(f"keyword:    fts5 {status.fts.tokenizer}, available={status.fts.available}")
    if status.db_path:
        lines.append(f"index:      {status.db_path}")
    if status.provider_unavailable_reason:
        lines.append(f"note:       {status.provider_unavailable_reason}")
    if status.provider_fallback is not None:
        fb = status.provider_fallback
        lines.append(f"provider fallback: {fb.from_} -> {fb.to}: {fb.reason}")
    if status.fallback is not None:
        fb = status.fallback
        lines.append(f"backend fallback: {fb.from_} -> {fb.to}: {fb.reason}")
    if status.last_sync_error:
        lines.append(f"last error: {status.last_sync_error}")
    return lines


@cli.command()
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@pass_ctx
def status(ctx: Context, as_json: bool) -> None:
    """Show the index state, the provider in use and the search mode."""
    snapshot = ctx.open().status()
    if as_json:
        _emit_json(snapshot.model_dump(mode="json", by_alias=True))
    else:
        click.echo("\n".join(_status_lines(snapshot)))


@cli.command()
@pass_ctx
def watch(ctx: Context) -> None:
    """Keep the index current while files change (Ctrl-C to stop)."""
    manager = ctx.open(watch=True)
    manager.sync(reason="watch-start")
    click.echo(f"watching {ctx.workspace} (Ctrl-C to stop)", err=True)
    try:
        threading.Event().wait()
    except KeyboardInterrupt:
        pass
    finally:
        manager.close()


@cli.command()
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def plugins(as_json: bool) -> None:
    """List installed plugins, what they provide and whether they loaded."""
    rows = plugin_rows(get_registry())
    if as_json:
        _emit_json(rows)
        return
    for row in rows:
        kinds = (
            ", ".join(
                f"{k} {n}"
                + (f" [{', '.join(row['capabilities'][n])}]" if n in row["capabilities"] else "")
                for k, n in row["provides"]
            )
            or "-"
        )
        version = f" {row['version']}" if row["version"] else ""
        dist = f"{row['distribution']}{version}" if row["distribution"] else "(registered)"
        line = f"{row['name']:<10} {row['status']:<8} {dist:<24} API {row['api']:<10} {kinds}"
        if row["error"]:
            line += f"  [{row['error']}]"
        click.echo(line)


@cli.command()
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@pass_ctx
def doctor(ctx: Context, as_json: bool) -> None:
    """Check SQLite, plugins and keys, then the workspace's own backend and provider.

    Exits 1 when a check fails.
    """
    registry = get_registry()
    report = doctor_report(registry)
    try:
        workspace = ctx.workspace
        settings = ctx.settings(sync={"watch": False, "on_search": False})
    except MemwellError as exc:
        report["workspace"] = {"config": f"{FAILED}{exc}"}
    else:
        report["workspace"] = workspace_report(workspace, settings, registry)
    if as_json:
        _emit_json(report)
    else:
        for section, items in report.items():
            click.secho(section, bold=True)
            for key, value in items.items():
                click.echo(f"  {key:<22} {value}")
    if report_failed(report):
        sys.exit(1)


def _register_plugin_commands() -> None:
    registry = get_registry()
    registry.call_each("memwell_cli_commands", cli=cli)


def main(argv: Sequence[str] | None = None) -> None:
    """Entry point of the ``memwell`` command."""
    debug = bool(os.environ.get("MEMWELL_DEBUG"))
    try:
        _register_plugin_commands()
        cli.main(args=list(argv) if argv is not None else None, standalone_mode=False)
    except click.exceptions.Abort:
        click.echo("aborted", err=True)
        sys.exit(130)
    except click.ClickException as exc:
        exc.show()
        sys.exit(exc.exit_code)
    except MemwellError as exc:
        if debug:
            raise
        click.echo(f"error: {exc}", err=True)
        sys.exit(2)
    except KeyboardInterrupt:
        sys.exit(130)
    except Exception as exc:
        if debug:
            raise
        click.echo(f"error: {type(exc).__name__}: {exc}", err=True)
        sys.exit(1)
    finally:
        from ..factory import close_all

        close_all()


from . import eval_command, mcp_command, plugin_command  # noqa: E402, F401  (register subcommands)
