"""An MCP server exposing memwell's agent tools (``memwell mcp``).

The server offers ``memory_search`` and ``memory_get`` with exactly the JSON schemas of
:func:`memwell.tools.tool_definitions` and runs them through :func:`memwell.tools.execute_tool`,
so every call returns the same never-raise payload an OpenAI tool call would (``disabled`` when
memory is unavailable, ``error`` for a bad argument). The payload is sent both as structured
content and as JSON text; ``isError`` is set when it carries an ``error``.

Plugins offer more tools for their own managers through the ``memwell_agent_tools`` hook
(LanceDB's ``memory_store``, ``memory_recall`` and ``memory_forget``, for example); the server
serves each with its definition's schema and runs it like :func:`memwell.tools.run_tool`.

Transports: stdio (the default) and streamable HTTP bound to 127.0.0.1. Managers are
synchronous, so every tool call runs in a worker thread and never blocks the event loop.

Example::

    from memwell import open_memory
    from memwell.mcp_server import McpMemoryServer

    memory = open_memory("~/agent")
    McpMemoryServer(memory).run_stdio()
"""

from __future__ import annotations

import copy
import json
import logging
import socket
import threading
from collections.abc import Callable
from functools import partial
from typing import Any

import anyio
import anyio.to_thread
import mcp.types as types
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server

from . import __version__
from .context.tool import compress_tool
from .descriptors import AgentTool
from .manager import MemorySearchManager
from .plugins import PluginRegistry
from .prompt import memory_prompt_section
from .recall.protocols import warm
from .tools import execute_tool, plugin_tools, run_tool, tool_definitions

log = logging.getLogger(__name__)

SERVER_NAME = "memwell"
HTTP_HOST = "127.0.0.1"
HTTP_PATH = "/mcp"


def _to_mcp(tool: AgentTool) -> types.Tool:
    function = tool.definition["function"]
    return types.Tool(
        name=function["name"],
        description=function.get("description") or None,
        input_schema=copy.deepcopy(function["parameters"]),
    )


def memory_tools(
    manager: MemorySearchManager,
    *,
    citations: str = "auto",
    registry: PluginRegistry | None = None,
) -> list[AgentTool]:
    """The tools to offer for ``manager``: search, get and ``compress_context``, then every
    plugin tool.

    Plugin tools come from the ``memwell_agent_tools`` hook (:func:`memwell.tools.plugin_tools`),
    asked once, when the server is built.
    """
    tools = [
        AgentTool(
            definition,
            partial(
                execute_tool, definition["function"]["name"], manager=manager, citations=citations
            ),
        )
        for definition in tool_definitions()
    ]
    return [*tools, compress_tool(manager), *plugin_tools(manager, registry)]


def _result(payload: dict[str, Any]) -> types.CallToolResult:
    text = json.dumps(payload, ensure_ascii=False, default=str)
    return types.CallToolResult(
        content=[types.TextContent(text=text)],
        structured_content=json.loads(text),
        is_error="error" in payload,
    )


class McpMemoryServer:
    """An MCP server over one memory manager; the caller opens and closes the manager.

    :param manager: the workspace's memory (open it with the watcher on to keep it current).
    :param citations: the citations mode passed to ``memory_search``.
    :param sync_on_start: run an incremental sync in the background when serving starts.
    :param registry: the plugin registry asked for plugin tools (default: the process-wide one).
    """

    def __init__(
        self,
        manager: MemorySearchManager,
        *,
        citations: str = "auto",
        sync_on_start: bool = True,
        registry: PluginRegistry | None = None,
    ) -> None:
        self.manager = manager
        self.sync_on_start = sync_on_start
        tools = memory_tools(manager, citations=citations, registry=registry)
        self.tools = {tool.name: tool for tool in tools}
        self.server: Server[Any] = Server(
            SERVER_NAME,
            version=__version__,
            instructions=memory_prompt_section(tools_available=self.tools, citations=citations),
            on_list_tools=self._list_tools,
            on_call_tool=self._call_tool,
        )

    async def _list_tools(
        self, ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return types.ListToolsResult(tools=[_to_mcp(tool) for tool in self.tools.values()])

    async def _call_tool(
        self, ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        tool = self.tools.get(params.name)
        if tool is None:
            return _result({"error": f"unknown tool {params.name!r}; known: {sorted(self.tools)}"})
        payload = await anyio.to_thread.run_sync(run_tool, tool, params.arguments or {})
        return _result(payload)

    def _start_sync(self) -> None:
        """Bring the index up to date without delaying the handshake; failures are logged."""
        if not self.sync_on_start:
            return

        def sync() -> None:
            try:
                self.manager.sync(reason="mcp-start")
                warm(self.manager)  # a new session: load the index and the model now
            except Exception as exc:
                log.warning("memwell mcp: initial sync failed: %s: %s", type(exc).__name__, exc)

        threading.Thread(target=sync, name="memwell-mcp-sync", daemon=True).start()

    async def serve_stdio(self) -> None:
        """Serve one client over this process's stdin and stdout until it disconnects."""
        self._start_sync()
        async with stdio_server() as (read_stream, write_stream):
            await self.server.run(
                read_stream, write_stream, self.server.create_initialization_options()
            )

    async def serve_http(self, port: int, *, on_ready: Callable[[str], None] | None = None) -> None:
        """Serve streamable HTTP at ``http://127.0.0.1:<port>/mcp`` until cancelled.

        ``port=0`` picks a free port; ``on_ready`` receives the URL once the socket listens.
        """
        import uvicorn

        app = self.server.streamable_http_app(streamable_http_path=HTTP_PATH, host=HTTP_HOST)
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((HTTP_HOST, port))
            sock.listen(128)  # connections wait in the backlog until uvicorn accepts them
            url = f"http://{HTTP_HOST}:{sock.getsockname()[1]}{HTTP_PATH}"
            config = uvicorn.Config(app, log_level="warning", lifespan="on")
            self._start_sync()
            if on_ready is not None:
                on_ready(url)
            await uvicorn.Server(config).serve(sockets=[sock])
        finally:
            sock.close()

    def run_stdio(self) -> None:
        """Blocking :meth:`serve_stdio`."""
        anyio.run(self.serve_stdio)

    def run_http(self, port: int, *, on_ready: Callable[[str], None] | None = None) -> None:
        """Blocking :meth:`serve_http`."""
        anyio.run(lambda: self.serve_http(port, on_ready=on_ready))
