"""Hook specifications for memwell plugins.

Plugins implement these with the :data:`hookimpl` marker (``from memwell.plugin import hookimpl``)
and register through an entry point in the ``memwell`` group::

    [project.entry-points.memwell]
    mybackend = "memwell_mybackend.plugin"

Every hook is called with keyword arguments only; an implementation may accept any subset of
the documented arguments, so new arguments can be added without breaking plugins.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

import pluggy

if TYPE_CHECKING:
    import click

    from memwell.contract.descriptors import (
        AgentTool,
        EmbeddingProviderSpec,
        RerankerSpec,
        SearchBackend,
        TextGeneratorSpec,
    )
    from memwell.contract.manager import MemorySearchManager
    from memwell.contract.messages import TurnMessage

_F = TypeVar("_F", bound=Callable[..., Any])

_spec = pluggy.HookspecMarker("memwell")
_impl = pluggy.HookimplMarker("memwell")

hookspec: Callable[[_F], _F] = _spec
"""Marks a function in this module as a hook specification."""

hookimpl: Callable[[_F], _F] = _impl
"""Marks a plugin function as an implementation of a memwell hook."""


@hookspec
def memwell_search_backends() -> Iterable[SearchBackend]:
    """Return the search backends this plugin provides.

    Called once when the registry is built; the descriptors are kept in a plain dict keyed by
    name, so searches never go through the hook machinery. Two plugins returning the same
    name is an error naming both.

    :returns: an iterable of :class:`memwell.plugin.SearchBackend` descriptors.

    Example::

        @hookimpl
        def memwell_search_backends():
            yield SearchBackend(name="jsonfile", create=JsonFileManager.from_context,
                                description="Memory in one JSON file")

    .. versionadded:: 0.1
    """


@hookspec
def memwell_embedding_providers() -> Iterable[EmbeddingProviderSpec]:
    """Return the embedding providers this plugin provides.

    Called once when the registry is built. A provider with ``auto_priority`` set takes part
    in ``provider = "auto"`` selection, lowest priority first.

    :returns: an iterable of :class:`memwell.plugin.EmbeddingProviderSpec` descriptors.

    Example::

        @hookimpl
        def memwell_embedding_providers():
            yield EmbeddingProviderSpec(id="hash", create=make_hash_provider,
                                        default_model="hash-64", transport="local")

    .. versionadded:: 0.1
    """


@hookspec
def memwell_text_generators() -> Iterable[TextGeneratorSpec]:
    """Return the text generators this plugin provides (text in, text out).

    Called once when the registry is built. memwell uses the generator chosen by
    ``[textgen] provider`` for short generated text: session-note slugs today, summaries and
    compaction by plugins. ``provider = "none"`` (the default) uses the offline extractive
    generator in core; ``"auto"`` takes generators with ``auto_priority`` set, lowest first,
    skipping those whose ``create`` raises
    :class:`~memwell.contract.errors.ProviderUnavailableError` (a remote generator without its key),
    and ends at the extractive one.

    :returns: an iterable of :class:`memwell.contract.descriptors.TextGeneratorSpec`
        descriptors whose ``create`` returns a
        :class:`memwell.contract.text_generator.TextGenerator`.

    Example::

        @hookimpl
        def memwell_text_generators():
            yield TextGeneratorSpec(id="upper", create=lambda ctx: Upper(ctx.model),
                                    default_model="upper-1", transport="local")

    .. versionadded:: 0.1
    """


@hookspec
def memwell_rerankers() -> Iterable[RerankerSpec]:
    """Return the rerankers this plugin provides (the optional rerank stage).

    Called once when the registry is built. ``[rerank] provider = "<id>"`` turns the stage on:
    :class:`memwell.runtime.rerank.RerankingManager` asks the backend for ``[rerank] candidates``
    hits, calls the reranker's ``rerank(query, documents)`` once with their texts, and serves them
    in its order with its scores (in [0, 1], so ``min_score`` applies to them). Off by default;
    ``memwell eval --rerank <id>`` measures one.

    :returns: an iterable of :class:`memwell.contract.descriptors.RerankerSpec` descriptors whose
        ``create`` returns a :class:`memwell.contract.descriptors.Reranker`.

    Example::

        @hookimpl
        def memwell_rerankers():
            yield RerankerSpec(id="overlap", create=lambda ctx: WordOverlap(ctx.model),
                               default_model="overlap-1", transport="local")

    .. versionadded:: 0.1
    """


@hookspec
def memwell_before_answer(
    manager: MemorySearchManager, prompt: str, session_key: str | None
) -> str | None:
    """Return context to prepend before the agent answers ``prompt`` (auto-recall).

    Every implementation is called; non-empty strings are joined with blank lines by
    :func:`memwell.agent.before_answer`. Text taken from memory must be wrapped as untrusted
    data (see :func:`memwell.agent.untrusted_block`). An exception is reported with the
    plugin's name and never reaches the agent.

    :param manager: the memory manager of the agent's workspace.
    :param prompt: the user's latest message.
    :param session_key: the agent session, if known.
    :returns: text to prepend, or ``None``.

    .. versionadded:: 0.1
    """


@hookspec
def memwell_after_turn(
    manager: MemorySearchManager,
    messages: Sequence[TurnMessage],
    session_key: str | None,
    success: bool,
) -> None:
    """Receive a finished agent turn (auto-capture).

    :param manager: the memory manager of the agent's workspace.
    :param messages: the turn's messages, oldest first.
    :param session_key: the agent session, if known.
    :param success: whether the turn completed without error.

    .. versionadded:: 0.1
    """


@hookspec
def memwell_agent_tools(manager: MemorySearchManager) -> Iterable[AgentTool] | None:
    """Return extra agent tools for ``manager``, next to ``memory_search`` and ``memory_get``.

    Called by :func:`memwell.agent.tools.plugin_tools`, which
    :func:`memwell.agent.tools.tool_definitions`, :func:`memwell.agent.tools.execute_tool` and
    the MCP server (``memwell mcp``) use. Return tools only when ``manager`` is the plugin's own
    kind of manager; ``open_memory`` puts the recall cache around every manager and a
    :class:`~memwell.runtime.fallback.FallbackMemoryManager` around every non-builtin backend,
    so look at :func:`memwell.plugin.unwrap` of it. A tool whose
    name is already taken (by a core tool or another plugin's tool) is ignored, and an
    implementation that raises is logged and skipped.

    :param manager: the memory manager the tools will serve.
    :returns: an iterable of :class:`memwell.contract.descriptors.AgentTool`, or ``None``.

    Example::

        @hookimpl
        def memwell_agent_tools(manager):
            manager = unwrap(manager)
            if isinstance(manager, JsonFileManager):
                yield AgentTool(definition=COUNT_TOOL, run=lambda args: {"count": manager.count()})

    .. versionadded:: 0.1
    """


@hookspec
def memwell_cli_commands(cli: click.Group) -> None:
    """Add subcommands to the ``memwell`` command line.

    :param cli: the root :class:`click.Group`; call ``cli.add_command(...)``.

    Example::

        @hookimpl
        def memwell_cli_commands(cli):
            @cli.group(name="ltm")
            def ltm(): ...

    .. versionadded:: 0.1
    """
