"""``memwell``: index, search and inspect Markdown memory from the shell.

User mistakes print one ``error:`` line and exit with status 2; unexpected failures print one
line and exit with status 1 (set ``MEMWELL_DEBUG=1`` for a traceback).

Start-up stays light: this module imports click and little else; each command imports what it
uses when it runs, and subcommands kept in their own modules are registered by name
(:data:`LAZY_COMMANDS`) and imported only when invoked.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from memwell import __version__
from memwell.cli.lazy import LazyGroup
from memwell.contract.api_version import PLUGIN_API_VERSION
from memwell.contract.errors import MemwellError
from memwell.util.lazy_import import defer_logging_setup

if TYPE_CHECKING:
    from memwell.contract.config import MemwellSettings
    from memwell.contract.manager import MemorySearchManager
    from memwell.contract.models import MemoryStatus
    from memwell.organise.reflection import ReflectResult
    from memwell.registry.plugins import PluginRegistry


class Context:
    """Global options shared by every subcommand."""

    def __init__(
        self,
        workspace: str | None,
        config: str | None,
        backend: str | None,
        provider: str | None,
        verbose: bool = False,
    ) -> None:
        self.workspace_arg = workspace
        self.verbose = verbose
        self.config = Path(config) if config else None
        self.overrides: dict[str, Any] = {}
        self.backend_flag = backend
        self.provider_flag = provider
        if backend:
            self.overrides["backend"] = backend
        if provider:
            self.overrides["provider"] = provider

    @property
    def workspace(self) -> Path:
        from memwell.runtime.factory import resolve_workspace

        return resolve_workspace(self.workspace_arg)

    def settings(self, **extra: Any) -> MemwellSettings:
        return self.settings_for(self.workspace, {**self.overrides, **extra})

    def settings_for(self, workspace: Path, overrides: dict[str, Any]) -> MemwellSettings:
        """Layered settings for ``workspace`` with ``overrides`` on top."""
        from memwell.contract.config import load_settings
        from memwell.registry.plugins import get_registry

        registry = get_registry()
        self._check_flags(registry)
        return load_settings(
            workspace, config_file=self.config, overrides=overrides, registry=registry
        )

    def _check_flags(self, registry: PluginRegistry) -> None:
        """Name the flag, not a config key, when ``--backend`` or ``--provider`` is unknown."""
        from memwell.contract.errors import ConfigError

        if self.backend_flag and registry.backend(self.backend_flag) is None:
            hint = registry.unknown_name_hint("backend", self.backend_flag)
            raise ConfigError(
                f"unknown backend {self.backend_flag!r} given by --backend ({hint})", key="backend"
            )
        provider = self.provider_flag
        if provider and provider not in ("auto", "none") and registry.provider(provider) is None:
            hint = registry.unknown_name_hint("provider", provider)
            raise ConfigError(
                f"unknown embedding provider {provider!r} given by --provider "
                f"({hint}; or 'auto', or 'none' for keyword-only mode)",
                key="provider",
            )

    def sessions_dir(self) -> Path | None:
        """The transcripts folder reads may use: only when sessions are indexed."""
        from memwell.sources.sessions import readable_sessions_dir

        settings = self.settings()
        return readable_sessions_dir(self.workspace, settings.sessions_dir, settings.sources)

    def open(self, *, watch: bool = False, **extra: Any) -> MemorySearchManager:
        """Open the workspace's memory; one-shot commands run without a watcher."""
        from memwell.runtime.factory import open_memory

        sync = {"sync": {"watch": watch, "on_search": False}} if not watch else {}
        return open_memory(self.workspace, settings=self.settings(**sync, **extra))


pass_ctx = click.make_pass_decorator(Context)


def _configure_logging(verbose: bool = False) -> None:
    from memwell.cli.log_handler import configure_logging

    configure_logging(verbose)


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
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
@click.version_option(
    __version__,
    prog_name="memwell",
    message=f"%(prog)s, version %(version)s (plugin API {PLUGIN_API_VERSION})",
)
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
    if verbose:
        _configure_logging(verbose=True)
    else:  # a command that logs nothing never imports logging (milliseconds of start-up)
        defer_logging_setup(_configure_logging)
    ctx.obj = Context(workspace, config, backend, provider, verbose)


#: Subcommands in their own modules: name -> (module, one-line help). The module defines the
#: command with ``@cli.command``; it is imported only when the command runs.
LAZY_COMMANDS: dict[str, tuple[str, str]] = {
    "eval": ("memwell.cli.eval_command", "Score retrieval quality (BEIR or LoCoMo layout)."),
    "mcp": ("memwell.cli.mcp_command", "Serve memory to MCP clients (stdio or HTTP)."),
    "write": ("memwell.cli.write_command", "Write a note into memory (append, create, replace)."),
    "recent": ("memwell.cli.write_command", "List recently changed memory files."),
    "session": ("memwell.cli.session_command", "Capture finished conversations into memory."),
    "flush-plan": ("memwell.cli.flush_command", "Say whether to flush memory before compaction."),
    "warm": ("memwell.cli.recall_commands", "Load the index, the model and the caches now."),
    "compress": ("memwell.cli.recall_commands", "Fit a transcript into a token budget."),
    "plugin": ("memwell.cli.plugin_command", "Write memwell plugins (memwell plugin new)."),
    "promote": ("memwell.cli.promote_command", "Promote often-recalled snippets to MEMORY.md."),
    "reflect": ("memwell.cli.reflect_command", "Build the entity graph, procedures, decay scores."),
}
for _name, (_module, _help) in LAZY_COMMANDS.items():
    cli.add_lazy_command(_name, _module, _help)


def _emit_json(data: Any) -> None:
    click.echo(json.dumps(data, indent=2, ensure_ascii=False, default=str))


@cli.command()
@click.option("--force", is_flag=True, help="Rebuild the whole index.")
@pass_ctx
def index(ctx: Context, force: bool) -> None:
    """Index the workspace's Markdown memory (incremental unless --force)."""
    from memwell.cli.progress import ProgressLine
    from memwell.cli.workspace_hints import warn_if_empty

    manager = ctx.open()
    with ProgressLine("indexing") as progress:
        manager.sync(reason="cli", force=force, progress=progress)
    status = manager.status()
    click.echo(
        f"indexed {status.files} files, {status.chunks} chunks "
        f"({status.search_mode}, provider {status.provider}"
        f"{', model ' + status.model if status.model else ''})"
    )
    warn_if_empty(ctx.workspace, status)


@cli.command()
@click.argument("query", required=False)
@click.option("-n", "--max-results", type=click.IntRange(1, 1000), help="Results to return.")
@click.option("--min-score", type=click.FloatRange(0.0, 1.0), help="Minimum score.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.option("--no-sync", is_flag=True, help="Do not look for changed files first.")
@click.option("--stdin", "from_stdin", is_flag=True, help="One query per line; JSON lines out.")
@pass_ctx
def search(
    ctx: Context,
    query: str | None,
    max_results: int | None,
    min_score: float | None,
    as_json: bool,
    no_sync: bool,
    from_stdin: bool,
) -> None:
    """Search memory; results carry file and line provenance."""
    from memwell.cli.progress import ProgressLine
    from memwell.cli.render import print_hits
    from memwell.cli.search_notes import print_search_notes
    from memwell.cli.workspace_hints import warn_if_empty, warn_keyword_only
    from memwell.retrieval.query_limit import truncation_warning
    from memwell.runtime.search_report import search_report

    if (query is None) != from_stdin:
        raise click.UsageError("give a QUERY or --stdin, not both")
    manager = ctx.open()
    if not no_sync:
        with ProgressLine("indexing before searching") as progress:
            manager.sync(reason="search", progress=progress)
    if query is None:
        from memwell.recall.report import search_json_lines

        lines = search_json_lines(manager, sys.stdin, max_results=max_results, min_score=min_score)
        for line in lines:
            click.echo(line)
        print_search_notes(search_report(manager.status()), manager, verbose=ctx.verbose)
        return
    results = manager.search(query, max_results=max_results, min_score=min_score)
    status = manager.status()
    # the cap the backend applied (as the memory_search tool reports it), not the settings again
    warning = truncation_warning(query, status.query_max_chars)
    if warning:
        click.echo(f"warning: {warning}", err=True)
    report = search_report(status)
    warn_keyword_only(status)
    if not results:
        warn_if_empty(ctx.workspace, status)
    print_search_notes(report, manager, verbose=ctx.verbose)
    if as_json:
        from memwell.recall.manager import RecallCachedManager
        from memwell.retrieval.routing import route_query

        routed = manager.route(query) if isinstance(manager, RecallCachedManager) else None
        route = (routed or route_query(query)).to_dict()
        hits = [r.model_dump() for r in results]
        _emit_json({"query": query, "results": hits, "route": route, **report})
        return
    if not results:
        click.echo("no results")
        return
    transcripts = any(hit.source == "sessions" for hit in results)
    print_hits(results, query, manager, ctx.sessions_dir() if transcripts else None)


@cli.command()
@click.argument("path")
@click.option("--from", "from_line", type=click.IntRange(1), help="First line (1-based).")
@click.option("--lines", type=click.IntRange(1), help="Number of lines.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@pass_ctx
def get(ctx: Context, path: str, from_line: int | None, lines: int | None, as_json: bool) -> None:
    """Print lines of a memory file or session transcript (safe read: memory files only)."""
    from memwell.contract.errors import MemoryFileNotFoundError
    from memwell.sources.paths import line_range

    manager = ctx.open()
    result = manager.read_file(path, from_line=from_line, lines=lines)
    if result.missing:
        raise MemoryFileNotFoundError(f"no such memory file: {result.path}")
    if from_line is not None and not result.text and not result.path.startswith("sessions/"):
        _check_from_line(manager, result.path, from_line)
    if as_json:
        _emit_json({**result.model_dump(), **line_range(result, from_line, lines)})
    else:
        click.echo(result.text)


def _check_from_line(manager: MemorySearchManager, path: str, from_line: int) -> None:
    """Refuse a ``--from`` past the end of the file (an empty read would look like success)."""
    from memwell.contract.errors import InvalidArgumentError

    text = manager.read_file(path).text
    count = len(text.split("\n")) - (1 if text.endswith("\n") or not text else 0)
    if from_line > count:
        noun = "line" if count == 1 else "lines"
        raise InvalidArgumentError(f"{path} has {count} {noun}; --from {from_line} is past the end")


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
    if status.degraded is not None:
        lines.append(f"degraded:   {status.degraded.mode}: {status.degraded.reason}")
    if status.last_sync_error:
        lines.append(f"last error: {status.last_sync_error}")
    lines += [f"index note: {note}" for note in status.custom.get("index_notes", [])]
    if status.recall_cache is not None:
        from memwell.recall.report import recall_cache_line

        lines.append(f"recall cache: {recall_cache_line(status.recall_cache)}")
    if status.recall_tracking is not None:
        tracking = status.recall_tracking
        state = f"ERROR {tracking.error}" if tracking.error else "ok"
        lines.append(
            f"recall tracking: {tracking.entries} chunks ({tracking.promoted} promoted), "
            f"{state}, {tracking.path}"
        )
    if status.unreadable:
        lines.append(f"unreadable: {len(status.unreadable)} ({'; '.join(status.unreadable)})")
    return lines


@cli.command()
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@pass_ctx
def status(ctx: Context, as_json: bool) -> None:
    """Show the index state, the provider in use and the search mode."""
    import msgspec

    from memwell.curation.decay_file import SCORES_PATH, read_scores
    from memwell.organise.decay_scores import summary

    snapshot = ctx.open().status()
    scores = read_scores(ctx.workspace / SCORES_PATH)
    decay = summary(scores) if scores is not None else None
    if as_json:
        extra = {"decay_scores": msgspec.to_builtins(decay)} if decay is not None else {}
        _emit_json({**snapshot.model_dump(mode="json", by_alias=True), **extra})
        return
    lines = _status_lines(snapshot)
    if decay is not None:
        lines.append(
            f"decay scores (memwell reflect, {decay.as_of}): {decay.files} files, "
            f"{decay.pinned} pinned, {decay.recalls} recalls, {decay.tokens_injected} tokens "
            f"injected, mean relevance {decay.mean_relevance}, least relevant: "
            + ", ".join(decay.least_relevant)
        )
    click.echo("\n".join(lines))


@cli.command()
@pass_ctx
def watch(ctx: Context) -> None:
    """Keep the index current while files change (Ctrl-C to stop); with
    ``[reflect] every_minutes`` set, also run memwell reflect that often."""
    import threading

    from memwell.organise.schedule import reflect_every
    from memwell.writing import MemoryWriter

    settings = ctx.settings()
    manager = ctx.open(watch=True)
    manager.sync(reason="watch-start")
    click.echo(f"watching {ctx.workspace} (Ctrl-C to stop)", err=True)
    stop = threading.Event()
    try:
        if settings.reflect.every_minutes > 0:
            writer = MemoryWriter(manager, ctx.workspace, settings, channel="watch")
            reflect_every(
                writer, settings.reflect.every_minutes * 60, wait=stop.wait, report=_reflected
            )
        stop.wait()
    except KeyboardInterrupt:
        pass
    finally:
        manager.close()


def _reflected(outcome: ReflectResult | MemwellError) -> None:
    """Report one scheduled reflect run of ``memwell watch`` on stderr."""
    if isinstance(outcome, MemwellError):
        click.echo(f"warning: scheduled reflect failed: {outcome}", err=True)
        return
    for error in outcome.audit_errors:
        click.echo(f"warning: scheduled reflect: {error}", err=True)
    if not outcome.indexed:
        click.echo(f"warning: reflected, but not indexed yet: {outcome.index_error}", err=True)
    if outcome.changed_anything:
        click.echo(
            f"reflected: {len(outcome.added)} pages added, {len(outcome.changed)} changed, "
            f"{len(outcome.retired)} retired",
            err=True,
        )


@cli.command()
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def plugins(as_json: bool) -> None:
    """List installed plugins, what they provide and whether they loaded."""
    from memwell.cli.diagnostics import plugin_rows
    from memwell.registry.plugins import get_registry

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
    from memwell.cli.diagnostics import FAILED, doctor_report, report_failed, workspace_report
    from memwell.registry.plugins import get_registry

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


def _register_plugin_commands(group: click.Group) -> None:
    from memwell.registry.plugins import get_registry

    get_registry().call_each("memwell_cli_commands", cli=group)


cli.plugin_loader = _register_plugin_commands


def _usage_error_line(exc: click.ClickException) -> str:
    """The README's one ``error:`` line for a click usage error, with where to get help."""
    line = f"error: {exc.format_message()}"
    ctx = getattr(exc, "ctx", None)
    if isinstance(exc, click.UsageError) and ctx is not None:
        line += f" (see '{ctx.command_path} --help')"
    return line


def main(argv: Sequence[str] | None = None) -> None:
    """Entry point of the ``memwell`` command."""
    debug = bool(os.environ.get("MEMWELL_DEBUG"))
    try:
        cli.main(args=list(argv) if argv is not None else None, standalone_mode=False)
    except click.exceptions.Abort:
        click.echo("aborted", err=True)
        sys.exit(130)
    except click.ClickException as exc:
        click.echo(_usage_error_line(exc), err=True)
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
        factory = sys.modules.get("memwell.runtime.factory")  # nothing to close if it never loaded
        if factory is not None:
            factory.close_all()
