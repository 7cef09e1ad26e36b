"""Everything a plugin needs, in one import: ``from memwell import plugin as mw`` or
``from memwell.plugin import hookimpl, SearchBackend, ...``.

The names here are the supported plugin API (:data:`PLUGIN_API_VERSION`); anything reached
through other modules may change without notice. Provider helpers that need NumPy
(:class:`EmbeddingProvider`, :data:`Vector`, the remote-provider helpers) load on first use, so
a plugin module that imports this stays cheap for commands that never embed.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, TypeVar

from .backend import MemoryBackend, ScannedFile, SearchRequest
from .config import MemwellSettings
from .config_validation import field_error
from .descriptors import (
    AgentTool,
    BackendContext,
    EmbeddingProviderSpec,
    ProviderContext,
    SearchBackend,
)
from .errors import (
    BackendUnavailableError,
    ConfigError,
    MemwellError,
    PathNotAllowedError,
    PluginError,
    ProviderError,
    ProviderUnavailableError,
)
from .hookspecs import hookimpl
from .manager import BaseMemoryManager, MemorySearchManager, ProgressCallback
from .models import (
    CacheStatus,
    FallbackStatus,
    FtsStatus,
    MemorySearchResult,
    MemoryStatus,
    ProbeResult,
    ReadFileResult,
    SourceCount,
    SyncProgress,
    VectorStatus,
)
from .plugin_api import PLUGIN_API_VERSION
from .records import Record
from .retrieval.candidate import Candidate
from .retrieval.chunking import CHUNKER_VERSION, Chunk, chunk_ids, chunk_markdown, sha256_hex
from .retrieval.cjk import segment_for_index, segment_query_terms
from .retrieval.fts_query import FtsQuery, bm25_rank_to_score, build_fts_query, keyword_boost
from .retrieval.hybrid import clamp01
from .retrieval.keywords import tokenize
from .retrieval.limits import enforce_input_limit
from .retrieval.pipeline import fuse_hybrid, keyword_floor, rank_candidates
from .retrieval.snippets import citations_enabled, format_citation, to_results, truncate_snippet
from .retrieval.stopwords import ALL_STOPWORDS
from .sources.discovery import list_memory_files, read_source_file, stat_source_file
from .sources.paths import read_memory_file
from .sources.redact import redact
from .sources.sessions import list_session_files, parse_session_jsonl, session_entry_hash

if TYPE_CHECKING:
    from .embeddings import EmbeddingProvider, Matrix, Vector
    from .remote import RemoteEmbeddingProvider, RemoteEndpoint, remote_provider_spec

_LAZY = {
    "EmbeddingProvider": "embeddings",
    "Matrix": "embeddings",
    "Vector": "embeddings",
    "RemoteEmbeddingProvider": "remote",
    "RemoteEndpoint": "remote",
    "remote_provider_spec": "remote",
}

_C = TypeVar("_C")


def plugin_settings(ctx: BackendContext | ProviderContext, model: type[_C]) -> _C:
    """The plugin's validated config section from ``ctx``, or the model's defaults.

    Replaces ``ctx.plugin_config if isinstance(ctx.plugin_config, MyConfig) else MyConfig()``
    in every ``create``.
    """
    config = ctx.plugin_config
    if config is None:
        return model()
    if not isinstance(config, model):
        raise PluginError(
            f"plugin config is a {type(config).__name__}, expected {model.__name__}: "
            "the descriptor's config_model and the create function disagree"
        )
    return config


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'memwell.plugin' has no attribute {name!r}")
    from importlib import import_module

    return getattr(import_module(f"memwell.{module}"), name)


__all__ = [
    "ALL_STOPWORDS",
    "CHUNKER_VERSION",
    "PLUGIN_API_VERSION",
    "AgentTool",
    "BackendContext",
    "BackendUnavailableError",
    "BaseMemoryManager",
    "CacheStatus",
    "Candidate",
    "Chunk",
    "ConfigError",
    "EmbeddingProvider",
    "EmbeddingProviderSpec",
    "FallbackStatus",
    "FtsQuery",
    "FtsStatus",
    "Matrix",
    "MemoryBackend",
    "MemorySearchManager",
    "MemorySearchResult",
    "MemoryStatus",
    "MemwellError",
    "MemwellSettings",
    "PathNotAllowedError",
    "PluginError",
    "ProbeResult",
    "ProgressCallback",
    "ProviderContext",
    "ProviderError",
    "ProviderUnavailableError",
    "ReadFileResult",
    "Record",
    "RemoteEmbeddingProvider",
    "RemoteEndpoint",
    "ScannedFile",
    "SearchBackend",
    "SearchRequest",
    "SourceCount",
    "SyncProgress",
    "Vector",
    "VectorStatus",
    "bm25_rank_to_score",
    "build_fts_query",
    "chunk_ids",
    "chunk_markdown",
    "citations_enabled",
    "clamp01",
    "enforce_input_limit",
    "field_error",
    "format_citation",
    "fuse_hybrid",
    "hookimpl",
    "keyword_boost",
    "keyword_floor",
    "list_memory_files",
    "list_session_files",
    "parse_session_jsonl",
    "plugin_settings",
    "rank_candidates",
    "read_memory_file",
    "read_source_file",
    "redact",
    "remote_provider_spec",
    "segment_for_index",
    "segment_query_terms",
    "session_entry_hash",
    "sha256_hex",
    "stat_source_file",
    "to_results",
    "tokenize",
    "truncate_snippet",
]
