"""``memwell mcp --print-config``: a ready MCP client entry for this install.

A desktop client does not start from a shell, so ``memwell`` is rarely on its PATH: the entry
names the running executable by its absolute path (or this Python with ``-m memwell``) and
the workspace by its absolute path. Over HTTP it gives the URL and the ``Authorization`` header.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from memwell.cli.main import Context

CLIENTS = ("claude", "cursor", "vscode")
SERVER_KEY = "memwell"


def memwell_command() -> list[str]:
    """The absolute command that runs this memwell: its console script when it was started
    through one, else this Python with ``-m memwell``."""
    script = Path(sys.argv[0])
    if script.name == "memwell" and script.is_file():
        return [str(script.absolute())]
    return [str(Path(sys.executable).absolute()), "-m", "memwell"]


def global_args(ctx: Context) -> list[str]:
    """The global options that give another process this command's workspace, config file,
    backend and provider, paths absolute."""
    args = ["-w", str(ctx.workspace)]
    if ctx.config is not None:
        args += ["--config", str(ctx.config.absolute())]
    for name in ("backend", "provider"):
        if name in ctx.overrides:
            args += [f"--{name}", str(ctx.overrides[name])]
    return args


def stdio_entry(client: str, command: list[str], args: list[str]) -> dict[str, Any]:
    """The client's config holding one stdio server that runs ``command`` with ``args``."""
    server: dict[str, Any] = {"command": command[0], "args": [*command[1:], *args]}
    if client == "vscode":
        return {"servers": {SERVER_KEY: {"type": "stdio", **server}}}
    return {"mcpServers": {SERVER_KEY: server}}


def http_entry(client: str, url: str, headers: dict[str, str]) -> dict[str, Any]:
    """The client's config holding one streamable HTTP server at ``url``, sending ``headers``."""
    server: dict[str, Any] = {"url": url, **({"headers": headers} if headers else {})}
    if client == "vscode":
        return {"servers": {SERVER_KEY: {"type": "http", **server}}}
    if client == "claude":  # Claude Code's .mcp.json; Claude Desktop takes the stdio entry
        return {"mcpServers": {SERVER_KEY: {"type": "http", **server}}}
    return {"mcpServers": {SERVER_KEY: server}}
