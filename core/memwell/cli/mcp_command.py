"""``memwell mcp``: serve the workspace's memory to MCP clients (stdio or streamable HTTP).

The MCP SDK is imported only when the command runs, so other commands start fast.
"""

from __future__ import annotations

import click

from ..factory import open_memory
from .main import Context, cli, pass_ctx

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
@pass_ctx
def mcp(ctx: Context, use_http: bool, port: int, watch: bool, read_only: bool) -> None:
    """Serve memory_search, memory_get, the write tools and the backend plugin's own tools
    over MCP, with the memory files as resources and the recall instructions as a prompt.

    The index is synced at start and, with --watch, kept current as files change. With
    --http the URL is printed to stderr once the server listens.
    """
    from ..mcp_server import McpMemoryServer
    from ..writing import MemoryWriter

    read_only_write = {"write": {"enabled": False}} if read_only else {}
    settings = ctx.settings(sync={"watch": watch}, **read_only_write)
    manager = open_memory(ctx.workspace, settings=settings)
    writer = MemoryWriter(manager, ctx.workspace, settings, channel="mcp")
    server = McpMemoryServer(manager, citations=settings.citations, writer=writer)
    try:
        if use_http:
            server.run_http(
                port, on_ready=lambda url: click.echo(f"memwell mcp: serving {url}", err=True)
            )
        else:
            server.run_stdio()
    finally:
        manager.close()
