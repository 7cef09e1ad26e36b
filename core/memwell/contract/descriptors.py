"""Descriptors that plugins return from the registration hooks, and the contexts they receive."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Protocol, runtime_checkable

import msgspec

from memwell.contract.errors import PluginError

if TYPE_CHECKING:
    from memwell.contract.config import MemwellSettings, PluginLookup
    from memwell.contract.embeddings import EmbeddingProvider, EmbeddingService
    from memwell.contract.manager import MemorySearchManager
    from memwell.contract.text_generator import TextGenerator


class BackendContext(msgspec.Struct, frozen=True):
    """Everything a backend needs to build a manager.

    ``plugin_config`` is the backend's own ``[backends.<name>]`` section validated by its
    ``config_model`` (``None`` when it has none). ``embeddings`` selects the provider lazily.
    ``purpose="status"`` asks for a manager without watchers or timers.
    """

    workspace: Path
    settings: MemwellSettings
    embeddings: EmbeddingService
    registry: PluginLookup
    plugin_config: Any = None
    purpose: Literal["default", "status"] = "default"


class ProviderContext(msgspec.Struct, frozen=True):
    """Everything a provider needs: the resolved model name and its configuration."""

    workspace: Path
    settings: MemwellSettings
    model: str
    plugin_config: Any = None


ConfigModel = type[Any]
"""A plugin's config section model: a :mod:`msgspec` struct (best a
:class:`memwell.contract.records.Record` with ``forbid_unknown_fields=True``) or a dataclass, both
validated by msgspec, or a pydantic ``BaseModel``, validated by pydantic (which memwell then
imports only because the plugin did). Strings convert to numbers and booleans; unknown keys of
a dataclass are refused; errors name the key and the file
(:mod:`memwell.contract.config_validation`)."""


KNOWN_CAPABILITIES = frozenset(
    {"keyword", "vector", "hybrid", "mmr", "decay", "sessions", "remote", "memories", "boolean"}
)
"""What a backend may declare: keyword and vector search, their fusion, MMR, temporal decay,
indexing of session transcripts (``sources = ["sessions"]``), an index shared over the network
(``remote``), a store of conversational memories besides the Markdown (``memories``), and a
keyword index that runs a query's ``+must -must_not`` terms as a boolean query (``boolean``;
without it the terms filter the retrieved candidates only, see
:mod:`memwell.retrieval.boolean`)."""


class SearchBackend(msgspec.Struct, frozen=True):
    """A search backend offered by a plugin.

    :param name: the value of ``backend = "..."`` that selects it.
    :param create: builds a :class:`~memwell.plugin.MemorySearchManager` from a
        :class:`BackendContext`; imports heavy dependencies lazily.
    :param config_model: the model of the ``[backends.<name>]`` section (see
        :data:`ConfigModel`).
    :param capabilities: names from :data:`KNOWN_CAPABILITIES`; ``memwell plugins`` shows them
        and ``open_memory`` warns when the settings ask for one the backend lacks (for example
        ``sources = ["sessions"]`` on a backend without ``"sessions"``). An unknown name is an
        error that disables the plugin's registration.
    :param diagnostics: optional facts for ``memwell doctor`` (versions, extensions...).
    """

    name: str
    create: Callable[[BackendContext], MemorySearchManager]
    description: str = ""
    config_model: ConfigModel | None = None
    capabilities: frozenset[str] = msgspec.field(default_factory=frozenset)
    diagnostics: Callable[[], dict[str, Any]] | None = None

    def __post_init__(self) -> None:
        unknown = sorted(set(self.capabilities) - KNOWN_CAPABILITIES)
        if unknown:
            raise PluginError(
                f"backend {self.name!r} declares unknown capabilities {unknown}; "
                f"known: {sorted(KNOWN_CAPABILITIES)}"
            )


class EmbeddingProviderSpec(msgspec.Struct, frozen=True):
    """An embedding provider offered by a plugin.

    :param id: the value of ``provider = "..."`` that selects it.
    :param create: builds the provider; raises
        :class:`~memwell.contract.errors.ProviderUnavailableError` when it cannot run here (missing
        key or model), which lets ``auto`` selection move on.
    :param transport: ``"local"`` or ``"remote"``.
    :param auto_priority: order in ``auto`` selection (lower first); ``None`` = never auto.
    :param key_env: environment variables that can hold its API key (for ``doctor``).
    :param diagnostics: optional facts for ``memwell doctor`` (engine, platform support...);
        a provider that cannot run on this machine says why under the key ``unavailable``.
    """

    id: str
    create: Callable[[ProviderContext], EmbeddingProvider]
    default_model: str
    transport: Literal["local", "remote"]
    auto_priority: int | None = None
    config_model: ConfigModel | None = None
    key_env: tuple[str, ...] = ()
    description: str = ""
    diagnostics: Callable[[], dict[str, Any]] | None = None


class TextGeneratorSpec(msgspec.Struct, frozen=True):
    """A text generator offered by a plugin: text in, text out (slugs, summaries, compaction).

    :param id: the value of ``[textgen] provider = "..."`` that selects it.
    :param create: builds the generator from a :class:`ProviderContext` whose ``model`` is
        ``textgen.model`` or ``default_model`` and whose ``plugin_config`` is the validated
        ``[providers.<id>]`` section; raises
        :class:`~memwell.contract.errors.ProviderUnavailableError` when it cannot run here (no key),
        which lets ``auto`` selection move on.
    :param transport: ``"local"`` or ``"remote"``.
    :param auto_priority: order in ``provider = "auto"`` selection (lower first); ``None`` =
        never chosen automatically.
    :param key_env: environment variables that can hold its API key.
    """

    id: str
    create: Callable[[ProviderContext], TextGenerator]
    default_model: str
    transport: Literal["local", "remote"]
    auto_priority: int | None = None
    config_model: ConfigModel | None = None
    key_env: tuple[str, ...] = ()
    description: str = ""


@runtime_checkable
class Reranker(Protocol):
    """Scores how well each document answers ``query``."""

    id: str
    model: str

    def rerank(self, query: str, documents: Sequence[str]) -> list[float]:
        """One relevance score in [0, 1] per document, in input order (higher is better)."""
        ...


class RerankerSpec(msgspec.Struct, frozen=True):
    """A reranker offered by a plugin: scores (query, chunk text) pairs for the rerank stage.

    :param id: the value of ``[rerank] provider = "..."`` that selects it.
    :param create: builds the :class:`Reranker` from a
    :class:`ProviderContext`
        whose ``model`` is ``rerank.model`` or ``default_model`` and whose ``plugin_config`` is
        the validated ``[providers.<id>]`` section; imports heavy dependencies lazily.
    :param transport: ``"local"`` or ``"remote"``.
    :param key_env: environment variables that can hold its API key.
    """

    id: str
    create: Callable[[ProviderContext], Reranker]
    default_model: str
    transport: Literal["local", "remote"]
    config_model: ConfigModel | None = None
    key_env: tuple[str, ...] = ()
    description: str = ""


class ToolHints(msgspec.Struct, frozen=True):
    """How an agent tool touches memory (MCP's readOnly/destructive/idempotent hints)."""

    read_only: bool
    destructive: bool = False
    idempotent: bool = False


READ_ONLY = ToolHints(read_only=True, idempotent=True)
"""The hints of a tool that only reads."""


class AgentTool(msgspec.Struct, frozen=True):
    """An agent tool offered by a plugin for one manager (see ``memwell_agent_tools``).

    :param definition: the OpenAI function-calling definition,
        ``{"type": "function", "function": {"name", "description", "parameters"}}``, where
        ``parameters`` is a JSON schema; the MCP server serves the same schema.
    :param run: executes the tool with already-parsed arguments and returns a JSON-able payload.
        It must never raise: a bad argument gives ``{"error": ...}`` and an unavailable store
        ``{"disabled": True, "error": ...}`` (see :mod:`memwell.agent.tools` for helpers).
    :param hints: what the tool does to memory, served as MCP tool annotations (unset: the
        MCP server declares a non-idempotent tool that may destroy data).
    :param output_schema: the JSON schema of every payload ``run`` returns, errors included
        (unset: the MCP server declares a plain object).
    """

    definition: dict[str, Any]
    run: Callable[[Mapping[str, Any]], dict[str, Any]]
    hints: ToolHints | None = None
    output_schema: Mapping[str, Any] | None = None

    @property
    def name(self) -> str:
        """The tool's name, ``definition["function"]["name"]``."""
        name: str = self.definition["function"]["name"]
        return name
