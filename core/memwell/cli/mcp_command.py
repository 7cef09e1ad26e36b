"""``memwell mcp``: serve the workspace's memory to MCP clients (stdio or streamable HTTP).

The MCP SDK is imported only when the command runs, so other commands start fast.
"""

from __future__ import annotations

import contextlib
import json

import click

from memwell.cli.main import Context, cli, pass_ctx
from memwell.cli.mcp_config import CLIENTS
from memwell.runtime.factory import open_memory

DEFAULT_HTTP_PORT = 8848


@cli.command(name="mcp")
@click.option("--http", "use_http", is_flag=True, help="Serve streamable HTTP on 127.0.0.1.")
@click.option(
    "--port",
    type=click.IntRange(0, 65535),
    default=DEFAULT_HTTP_PORT,
    show_default=True,
    help="Port for --http (0 picks a free one).",
)
@click.option(
    "--watch/--no-watch",
    default=True,
    show_default=True,
    help="Keep the index current with a file watcher.",
)
@click.option("--read-only", is_flag=True, help="Offer no write tools ([write] enabled = false).")
@click.option(
    "--no-auth",
    is_flag=True,
    help="With --http, serve without the bearer token: any local process may call the tools.",
)
@click.option(
    "--print-config",
    is_flag=True,
    help="Print a ready MCP client config for this install and exit.",
)
@click.option(
    "--client",
    type=click.Choice(CLIENTS),
    default="claude",
    show_default=True,
    help="The client whose config --print-config prints.",
)
@pass_ctx
def mcp(
    ctx: Context,
    use_http: bool,
    port: int,
    watch: bool,
    read_only: bool,
    no_auth: bool,
    print_config: bool,
    client: str,
) -> None:
    """Serve memory_search, memory_get, the write tools and the backend plugin's own tools
    over MCP, with the memory files as resources and the recall instructions as a prompt.

    The index is synced at start and, with --watch, kept current as files change. With
    --http the URL is printed to stderr once the server listens, and clients must send
    'Authorization: Bearer <token>' (the token is made at the first start and kept in
    $XDG_CONFIG_HOME/memwell/mcp-token). --print-config prints the client entry, token included.
    """
    if print_config:
        config = _client_config(ctx, client, use_http, port, read_only, no_auth)
        click.echo(json.dumps(config, indent=2))
        return
    with contextlib.suppress(KeyboardInterrupt):  # Ctrl-C stops a server, starting or not
        _serve(
            ctx, use_http=use_http, port=port, watch=watch, read_only=read_only, auth=not no_auth
        )


def _serve(
    ctx: Context, *, use_http: bool, port: int, watch: bool, read_only: bool, auth: bool
) -> None:
    from memwell.mcp.server import McpMemoryServer
    from memwell.writing import MemoryWriter

    listener, token = None, None
    if use_http:  # bind before opening the index: a taken port fails at once
        from memwell.mcp.http_guard import bind_http

        listener = bind_http(port)
        if auth:
            token = _announced_token()
        else:
            _no_auth_warning()
    read_only_write = {"write": {"enabled": False}} if read_only else {}
    settings = ctx.settings(sync={"watch": watch}, **read_only_write)
    manager = open_memory(ctx.workspace, settings=settings)
    try:
        writer = MemoryWriter(manager, ctx.workspace, settings, channel="mcp")
        server = McpMemoryServer(manager, citations=settings.citations, writer=writer)
        if listener is not None:
            server.run_http(
                listener,
                token=token,
                on_ready=lambda url: click.echo(f"memwell mcp: serving {url}", err=True),
            )
        else:
            server.run_stdio()
    finally:
        manager.close()
        if listener is not None:
            listener.close()


def _announced_token() -> str:
    """The bearer token, said on stderr: whole when new, else where it is kept."""
    from memwell.mcp.token import http_token

    token = http_token()
    if token.created:
        click.echo(f"memwell mcp: new bearer token (kept in {token.path}): {token.value}", err=True)
    else:
        click.echo(f"memwell mcp: clients send the bearer token kept in {token.path}", err=True)
    click.echo(
        "memwell mcp: 'memwell mcp --print-config --http' prints a ready client config", err=True
    )
    return token.value


def _no_auth_warning() -> None:
    """Say on stderr, at every start, that the server asks no token."""
    click.echo(
        "memwell mcp: WARNING: --no-auth: no token is asked; any process on this machine, and "
        "any web page that reaches the port, can read and write this memory",
        err=True,
    )


def _client_config(
    ctx: Context, client: str, use_http: bool, port: int, read_only: bool, no_auth: bool
) -> dict[str, object]:
    from memwell.cli.mcp_config import global_args, http_entry, memwell_command, stdio_entry

    if not use_http:
        args = [*global_args(ctx), "mcp", *(["--read-only"] if read_only else [])]
        return stdio_entry(client, memwell_command(), args)
    if port == 0:
        raise click.UsageError("--print-config --http needs the server's --port, not 0")
    from memwell.mcp.http_guard import HTTP_HOST
    from memwell.mcp.server import HTTP_PATH
    from memwell.mcp.token import http_token

    headers = {} if no_auth else {"Authorization": f"Bearer {http_token().value}"}
    return http_entry(client, f"http://{HTTP_HOST}:{port}{HTTP_PATH}", headers)
