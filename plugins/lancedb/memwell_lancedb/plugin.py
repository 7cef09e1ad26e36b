"""Registers the ``lancedb`` backend, its agent tools and lifecycle hooks, and ``memwell ltm``.

This module stays light: LanceDB is imported only when the backend is chosen, and the hooks
do nothing (without importing it) unless a LanceDB manager exists in this process.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING

from memwell.plugin import AgentTool, BackendContext, SearchBackend, TurnMessage, hookimpl

from .config import LanceConfig

if TYPE_CHECKING:
    import click

    from .manager import LanceMemoryManager

MEMWELL_PLUGIN_API = ">=1.0,<2"
"""The memwell plugin API versions this plugin supports."""

_MANAGER_MODULE = "memwell_lancedb.manager"


def _create(ctx: BackendContext) -> LanceMemoryManager:
    from .manager import LanceMemoryManager  # imports LanceDB when the backend is chosen

    config = ctx.plugin_config if isinstance(ctx.plugin_config, LanceConfig) else None
    return LanceMemoryManager(ctx, config)


def _diagnostics() -> dict[str, object]:
    from importlib import metadata

    facts: dict[str, object] = {}
    for dist in ("lancedb", "pyarrow"):
        try:
            facts[dist] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            facts[dist] = "not installed"
    return facts


def _lance(manager: object) -> LanceMemoryManager | None:
    module = sys.modules.get(_MANAGER_MODULE)
    if module is None:  # no LanceDB manager was ever created in this process
        return None
    lance: LanceMemoryManager | None = module.as_lance_manager(manager)
    return lance


@hookimpl
def memwell_search_backends() -> Iterator[SearchBackend]:
    yield SearchBackend(
        name="lancedb",
        create=_create,
        description="LanceDB vectors + full-text search, with long-term memories (local or remote)",
        config_model=LanceConfig,
        capabilities=frozenset(
            {"keyword", "vector", "hybrid", "mmr", "decay", "sessions", "remote", "memories"}
        ),
        diagnostics=_diagnostics,
    )


@hookimpl
def memwell_agent_tools(manager: object) -> list[AgentTool] | None:
    """``memory_store``, ``memory_recall`` and ``memory_forget``, when ``manager`` is LanceDB's.

    ``manager`` may be ``open_memory``'s fallback wrapper while LanceDB serves; the tools are
    bound to ``manager`` itself, so they answer ``disabled`` after a switch to the fallback.
    """
    if _lance(manager) is None:
        return None
    from .tools import agent_tools

    return agent_tools(manager)


@hookimpl
def memwell_before_answer(manager: object, prompt: str) -> str | None:
    """Auto-recall: the best memories for ``prompt`` as an untrusted block, when enabled."""
    lance = _lance(manager)
    if lance is None or not lance.config.auto_recall:
        return None
    return lance.recall_context(prompt)


@hookimpl
def memwell_after_turn(
    manager: object, messages: Sequence[TurnMessage], session_key: str | None, success: bool
) -> None:
    """Auto-capture from a successful turn's user messages, when enabled."""
    lance = _lance(manager)
    if lance is None or not lance.config.auto_capture or not success or not messages:
        return
    lance.capture_turn(messages, session_key=session_key)


@hookimpl
def memwell_cli_commands(cli: click.Group) -> None:
    from .cli import ltm

    cli.add_command(ltm)
