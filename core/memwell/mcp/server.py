"""An MCP server exposing memwell's agent tools (``memwell mcp``).

The server offers ``memory_search`` and ``memory_get`` with exactly the JSON schemas of
:func:`memwell.agent.tools.tool_definitions` and runs them through
:func:`memwell.agent.tools.execute_tool`, so every call returns the same never-raise payload an
OpenAI tool call would (``disabled`` when memory is unavailable, ``error`` for a bad argument). The
payload is sent both as structured content and as JSON text; ``isError`` is set when it carries an
``error``. Given a
:class:`~memwell.writing.MemoryWriter`, it also offers the write tools (``memory_write``,
``memory_edit``, ``memory_supersede``, ``memory_recent``; only ``memory_recent`` when writing
is disabled). Every tool carries read-only/destructive/idempotent annotations and an output
schema.

The memory files are resources (``memwell:<path>``, listed by discovery, read through the
manager's safe ``read_file``; the template ``memwell:{+path}`` names any of them), and the
recall instructions are the prompt ``memory_recall``.
The prompt ``memory_flush`` is the pre-compaction flush (:mod:`memwell.agent.flush`): given the
host's context usage it says whether to flush now, once per compaction cycle, and how.

Plugins offer more tools for their own managers through the ``memwell_agent_tools`` hook
(LanceDB's ``memory_store``, ``memory_recall`` and ``memory_forget``, for example); the server
serves each with its definition's schema and runs it like :func:`memwell.agent.tools.run_tool`.

Transports: stdio (the default) and streamable HTTP bound to 127.0.0.1, behind a bearer token
and the checks of :mod:`memwell.mcp.http_guard`. Managers are
synchronous, so every tool call runs in a worker thread and never blocks the event loop.

Example::

    from memwell import open_memory, writer
    from memwell.mcp.server import McpMemoryServer

    memory = open_memory("~/agent")
    McpMemoryServer(memory, writer=writer(memory)).run_stdio()
"""

from __future__ import annotations

import copy
import json
import socket
import threading
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any
from urllib.parse import quote, unquote

import anyio
import anyio.to_thread
import mcp.types as types
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server
from mcp.shared.exceptions import MCPError
from mcp_types import INVALID_PARAMS

from memwell import __version__
from memwell.agent.compress_tool import compress_tool
from memwell.agent.flush import (
    FileFlushState,
    FlushState,
    MemoryFlushState,
    plan_from_arguments,
    plan_text,
)
from memwell.agent.prompt import memory_prompt_section
from memwell.agent.tool_schemas import GET_OUTPUT_SCHEMA, SEARCH_OUTPUT_SCHEMA
from memwell.agent.tools import (
    WRITE_TOOL_NAMES,
    execute_tool,
    plugin_tools,
    run_tool,
    tool_definitions,
)
from memwell.agent.write_tools import disabled_payload, write_tools
from memwell.contract.config import FlushSettings
from memwell.contract.descriptors import READ_ONLY, AgentTool
from memwell.contract.manager import MemorySearchManager
from memwell.contract.recall_protocols import warm
from memwell.mcp.http_guard import HTTP_HOST, GuardedHttp, bind_http
from memwell.mcp.jsonrpc import screened_stdio
from memwell.mcp.lingering_close import lingering
from memwell.registry.plugins import PluginRegistry
from memwell.util.lazy_import import lazy_logger
from memwell.writing import MemoryWriter
from memwell.writing.recent import recent_files

log = lazy_logger(__name__)

SERVER_NAME = "memwell"
HTTP_PATH = "/mcp"
RESOURCE_SCHEME = "memwell:"
RECALL_PROMPT = "memory_recall"
FLUSH_PROMPT = "memory_flush"
_FLUSH_ARGUMENTS = {
    "tokens_used": "Tokens the conversation uses now (with context_window; omit both to flush).",
    "context_window": "The model's context window in tokens.",
    "compaction_count": "Compactions so far, or any id of the current compaction cycle.",
    "transcript_bytes": "The transcript's size in bytes, if known.",
    "reserve_tokens": "The host's own compaction reserve in tokens, if any.",
    "session_key": "The conversation, so each session gets one flush per cycle.",
}
_CORE_OUTPUT_SCHEMAS = {"memory_search": SEARCH_OUTPUT_SCHEMA, "memory_get": GET_OUTPUT_SCHEMA}


def _to_mcp(tool: AgentTool) -> types.Tool:
    function = tool.definition["function"]
    hints = tool.hints
    annotations = types.ToolAnnotations(
        read_only_hint=hints is not None and hints.read_only,
        destructive_hint=hints is None or hints.destructive,
        idempotent_hint=hints is not None and hints.idempotent,
        open_world_hint=False,
    )
    schema = tool.output_schema if tool.output_schema is not None else {"type": "object"}
    return types.Tool(
        name=function["name"],
        description=function.get("description") or None,
        input_schema=copy.deepcopy(function["parameters"]),
        output_schema=copy.deepcopy(dict(schema)),
        annotations=annotations,
    )


def resource_uri(path: str) -> str:
    """The resource URI of a memory file's display path: ``memwell:memory/2026-01-02.md``."""
    return RESOURCE_SCHEME + quote(path, safe="/")


def memory_tools(
    manager: MemorySearchManager,
    *,
    citations: str = "auto",
    registry: PluginRegistry | None = None,
    writer: MemoryWriter | None = None,
) -> list[AgentTool]:
    """The tools to offer for ``manager``: search and get, the write tools of ``writer``,
    ``compress_context``, then every plugin tool.

    Plugin tools come from the ``memwell_agent_tools`` hook
    (:func:`memwell.agent.tools.plugin_tools`), asked once, when the server is built.
    """
    tools = []
    for definition in tool_definitions():
        name = definition["function"]["name"]
        run = partial(execute_tool, name, manager=manager, citations=citations)
        tools.append(AgentTool(definition, run, READ_ONLY, _CORE_OUTPUT_SCHEMAS[name]))
    return [*tools, *write_tools(writer), compress_tool(manager), *plugin_tools(manager, registry)]


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
    :param writer: the workspace's writer; without one the server is read-only.
    """

    def __init__(
        self,
        manager: MemorySearchManager,
        *,
        citations: str = "auto",
        sync_on_start: bool = True,
        registry: PluginRegistry | None = None,
        writer: MemoryWriter | None = None,
    ) -> None:
        self.manager = manager
        self.writer = writer
        self._flush_state: FlushState = MemoryFlushState()
        self.sync_on_start = sync_on_start
        tools = memory_tools(manager, citations=citations, registry=registry, writer=writer)
        self.tools = {tool.name: tool for tool in tools}
        self.instructions = memory_prompt_section(tools_available=self.tools, citations=citations)
        self.server: Server[Any] = Server(
            SERVER_NAME,
            version=__version__,
            instructions=self.instructions,
            on_list_tools=self._list_tools,
            on_call_tool=self._call_tool,
            on_list_resources=self._list_resources,
            on_list_resource_templates=self._list_resource_templates,
            on_read_resource=self._read_resource,
            on_list_prompts=self._list_prompts,
            on_get_prompt=self._get_prompt,
        )

    async def _list_tools(
        self, ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return types.ListToolsResult(tools=[_to_mcp(tool) for tool in self.tools.values()])

    async def _call_tool(
        self, ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        tool = self.tools.get(params.name)
        if tool is None and params.name in WRITE_TOOL_NAMES:
            return _result(disabled_payload(params.name))
        if tool is None:
            return _result({"error": f"unknown tool {params.name!r}; known: {sorted(self.tools)}"})
        payload = await anyio.to_thread.run_sync(run_tool, tool, params.arguments or {})
        return _result(payload)

    def _memory_files(self) -> list[types.Resource]:
        if self.writer is not None:
            workspace, extra = self.writer.workspace, self.writer.settings.extra_paths
        else:
            status = self.manager.status()
            workspace, extra = Path(status.workspace_dir), status.extra_paths
        files = sorted(recent_files(workspace, None, extra), key=lambda f: f.path)
        return [
            types.Resource(
                uri=resource_uri(f.path),
                name=f.path,
                description=f"Memory file, modified {f.modified.isoformat()}",
                mime_type="text/markdown",
                size=f.bytes,
            )
            for f in files
        ]

    async def _list_resources(
        self, ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListResourcesResult:
        resources = await anyio.to_thread.run_sync(self._memory_files)
        return types.ListResourcesResult(resources=resources)

    async def _list_resource_templates(
        self, ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListResourceTemplatesResult:
        template = types.ResourceTemplate(
            uri_template=RESOURCE_SCHEME + "{+path}",
            name="memory-file",
            description="A memory file by its workspace-relative path (memory_get's path rules).",
            mime_type="text/markdown",
        )
        return types.ListResourceTemplatesResult(resource_templates=[template])

    async def _read_resource(
        self, ctx: ServerRequestContext[Any], params: types.ReadResourceRequestParams
    ) -> types.ReadResourceResult:
        uri = str(params.uri)
        if not uri.startswith(RESOURCE_SCHEME):
            raise MCPError(INVALID_PARAMS, f"not a memwell resource: {uri}")
        path = unquote(uri[len(RESOURCE_SCHEME) :])
        try:
            read = await anyio.to_thread.run_sync(self.manager.read_file, path)
        except Exception as exc:
            raise MCPError(INVALID_PARAMS, f"{type(exc).__name__}: {exc}") from exc
        contents = types.TextResourceContents(uri=uri, mime_type="text/markdown", text=read.text)
        return types.ReadResourceResult(contents=[contents])

    async def _list_prompts(
        self, ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListPromptsResult:
        prompt = types.Prompt(
            name=RECALL_PROMPT,
            description="How to recall (and, with the write tools, record) memory.",
        )
        flush = types.Prompt(
            name=FLUSH_PROMPT,
            description="Pre-compaction memory flush: whether to save durable memories now.",
            arguments=[
                types.PromptArgument(name=name, description=text, required=False)
                for name, text in _FLUSH_ARGUMENTS.items()
            ],
        )
        return types.ListPromptsResult(prompts=[prompt, flush])

    def _flush_prompt(self, arguments: dict[str, str]) -> types.GetPromptResult:
        settings, state = FlushSettings(), self._flush_state
        if self.writer is not None:
            settings = self.writer.settings.flush
            state = FileFlushState.for_workspace(self.writer.workspace, self.writer.settings)
        try:
            plan = plan_from_arguments(arguments, settings=settings, state=state)
        except ValueError as exc:
            raise MCPError(INVALID_PARAMS, str(exc)) from exc
        message = types.PromptMessage(role="user", content=types.TextContent(text=plan_text(plan)))
        description = f"Flush to {plan.target}" if plan.flush else "No memory flush needed"
        return types.GetPromptResult(description=description, messages=[message])

    async def _get_prompt(
        self, ctx: ServerRequestContext[Any], params: types.GetPromptRequestParams
    ) -> types.GetPromptResult:
        if params.name == FLUSH_PROMPT:
            return await anyio.to_thread.run_sync(self._flush_prompt, dict(params.arguments or {}))
        if params.name != RECALL_PROMPT:
            known = f"unknown prompt {params.name!r}; known: {RECALL_PROMPT!r}, {FLUSH_PROMPT!r}"
            raise MCPError(INVALID_PARAMS, known)
        message = types.PromptMessage(
            role="user", content=types.TextContent(text=self.instructions)
        )
        return types.GetPromptResult(description="Memory recall instructions", messages=[message])

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
        """Serve one client over this process's stdin and stdout until it disconnects; a
        malformed message is answered with a JSON-RPC error (:mod:`memwell.mcp.jsonrpc`)."""
        self._start_sync()
        async with screened_stdio() as (read_stream, write_stream):
            await self.server.run(
                read_stream, write_stream, self.server.create_initialization_options()
            )

    async def serve_http(
        self,
        listener: socket.socket | int,
        *,
        token: str | None,
        on_ready: Callable[[str], None] | None = None,
    ) -> None:
        """Serve streamable HTTP at ``http://127.0.0.1:<port>/mcp`` until cancelled.

        ``listener`` is a socket from :func:`memwell.mcp.http_guard.bind_http`, or a port to bind
        (``0`` picks a free one). Clients must send ``Authorization: Bearer <token>``; with
        ``token=None`` anyone who can reach the port may call every tool. Requests pass
        :class:`memwell.mcp.http_guard.GuardedHttp` first. ``on_ready`` receives the URL once the
        socket listens.
        """
        import uvicorn

        sock = bind_http(listener) if isinstance(listener, int) else listener
        try:
            port = sock.getsockname()[1]
            url = f"http://{HTTP_HOST}:{port}{HTTP_PATH}"
            app = self.server.streamable_http_app(streamable_http_path=HTTP_PATH, host=HTTP_HOST)
            guarded = GuardedHttp(app, port=port, token=token)
            config = uvicorn.Config(guarded, log_level="warning", lifespan="on")
            config.load()
            config.http_protocol_class = lingering(config.http_protocol_class)
            self._start_sync()

            class _Server(uvicorn.Server):
                async def startup(self, sockets: list[socket.socket] | None = None) -> None:
                    await super().startup(sockets=sockets)
                    if self.started and on_ready is not None:
                        on_ready(url)  # once requests are served, not while starting

            await _Server(config).serve(sockets=[sock])
        finally:
            sock.close()

    def run_stdio(self) -> None:
        """Blocking :meth:`serve_stdio`."""
        anyio.run(self.serve_stdio)

    def run_http(
        self,
        listener: socket.socket | int,
        *,
        token: str | None,
        on_ready: Callable[[str], None] | None = None,
    ) -> None:
        """Blocking :meth:`serve_http`."""
        anyio.run(lambda: self.serve_http(listener, token=token, on_ready=on_ready))
