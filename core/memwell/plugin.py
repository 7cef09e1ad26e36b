"""Everything a plugin needs, in one import: ``from memwell import plugin as mw`` or
``from memwell.plugin import hookimpl, SearchBackend, ...``.

The names here are the supported plugin API (:data:`PLUGIN_API_VERSION`); anything reached
through other modules may change without notice. Provider helpers that need NumPy
(:class:`EmbeddingProvider`, :data:`Vector`, the remote-provider helpers) load on first use, so
a plugin module that imports this stays cheap for commands that never embed.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, TypeVar

from memwell.contract.api_version import PLUGIN_API_VERSION
from memwell.contract.config import MemwellSettings
from memwell.contract.config_validation import field_error
from memwell.contract.descriptors import (
    AgentTool,
    BackendContext,
    EmbeddingProviderSpec,
    ProviderContext,
    SearchBackend,
)
from memwell.contract.errors import (
    BackendUnavailableError,
    ConfigError,
    MemwellError,
    PathNotAllowedError,
    PluginError,
    ProviderError,
    ProviderUnavailableError,
)
from memwell.contract.hookspecs import hookimpl
from memwell.contract.manager import BaseMemoryManager, MemorySearchManager, ProgressCallback
from memwell.contract.models import (
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
from memwell.contract.records import Record
from memwell.contract.search_options import SearchOptions
from memwell.retrieval.candidate import Candidate
from memwell.retrieval.chunking import CHUNKER_VERSION, Chunk, chunk_ids, chunk_markdown, sha256_hex
from memwell.retrieval.cjk import segment_for_index, segment_query_terms
from memwell.retrieval.fts_query import FtsQuery, bm25_rank_to_score, build_fts_query, keyword_boost
from memwell.retrieval.hybrid import clamp01
from memwell.retrieval.keywords import tokenize
from memwell.retrieval.limits import enforce_input_limit
from memwell.retrieval.parsed_query import ParsedQuery
from memwell.retrieval.pipeline import (
    floor_vector_only,
    fuse_hybrid,
    keyword_floor,
    rank_candidates,
    ranked_order,
)
from memwell.retrieval.snippets import (
    citations_enabled,
    format_citation,
    to_results,
    truncate_snippet,
)
from memwell.retrieval.stopwords import ALL_STOPWORDS
from memwell.runtime.backend import MemoryBackend, ScannedFile, SearchRequest
from memwell.sources.discovery import list_memory_files, read_source_file, stat_source_file
from memwell.sources.paths import read_memory_file
from memwell.sources.redact import redact
from memwell.sources.sessions import list_session_files, parse_session_jsonl, session_entry_hash
from memwell.util.lazy_import import lazy_exports

if TYPE_CHECKING:
    from memwell.agent.lifecycle import (
        TurnMessage,
        after_turn,
        before_answer,
        looks_like_prompt_injection,
        untrusted_block,
    )
    from memwell.agent.prompt import memory_prompt_section
    from memwell.agent.tools import (
        BadArgument,
        error_text,
        execute_tool,
        optional_int,
        parse_arguments,
        tool_definitions,
    )
    from memwell.cli.main import Context as CliContext
    from memwell.contract.config import load_settings, plugin_config
    from memwell.contract.descriptors import (
        READ_ONLY,
        Reranker,
        RerankerSpec,
        TextGeneratorSpec,
        ToolHints,
    )
    from memwell.contract.embeddings import EmbeddingProvider, Matrix, Vector
    from memwell.contract.errors import InvalidArgumentError
    from memwell.contract.models import SearchDegradation, SearchMode
    from memwell.contract.text_generator import TextGenerator
    from memwell.curation.session_delta import SessionDeltaTracker
    from memwell.providers.fallback_record import FALLBACK_FILE
    from memwell.providers.remote import (
        RemoteEmbeddingProvider,
        RemoteEndpoint,
        remote_provider_spec,
    )
    from memwell.providers.runtime import LADDER_STEPS, EmbeddingRuntime
    from memwell.recall.query_vectors import QueryVectors
    from memwell.registry.plugins import get_registry
    from memwell.retrieval.calibration import (
        CALIBRATION_ID,
        Calibration,
        calibrate,
        calibration_id,
        probe_languages,
    )
    from memwell.retrieval.chunking import CHARS_PER_TOKEN, remap_lines
    from memwell.retrieval.cjk import CJK_CLASS, is_cjk_char, segment_for_fts
    from memwell.retrieval.coverage import measure_coverage, stem_weights, term_weights
    from memwell.retrieval.file_similarity import blend_file_similarity, mean_vector
    from memwell.retrieval.fts_query import ChunkTerms, fts_phrase, fts_text_and_terms, query_terms
    from memwell.retrieval.keywords import extract_keywords
    from memwell.retrieval.pipeline import rank_keyword_only
    from memwell.runtime.backend import FTS_ONLY_MODEL, REINDEX_PENDING
    from memwell.runtime.factory import open_memory, resolve_workspace
    from memwell.runtime.fallback import unwrap
    from memwell.sources.discovery import (
        MEMORY_DIR,
        ROOT_MEMORY_FILES,
        normalize_extra_paths,
        scan_memory_files,
    )
    from memwell.sources.file_scan import ScanOutcome
    from memwell.sources.file_scan import scan_memory_files as file_scan_search
    from memwell.sources.sessions import layout_name
    from memwell.util.debounce import Debouncer

_LAZY = {  # name -> "module" or "module:attribute", imported on first use
    "EmbeddingProvider": "contract.embeddings",
    "Matrix": "contract.embeddings",
    "Vector": "contract.embeddings",
    "RemoteEmbeddingProvider": "providers.remote",
    "RemoteEndpoint": "providers.remote",
    "remote_provider_spec": "providers.remote",
    "READ_ONLY": "contract.descriptors",
    "RerankerSpec": "contract.descriptors",
    "TextGeneratorSpec": "contract.descriptors",
    "ToolHints": "contract.descriptors",
    "InvalidArgumentError": "contract.errors",
    "SearchDegradation": "contract.models",
    "SearchMode": "contract.models",
    "FTS_ONLY_MODEL": "runtime.backend",
    "REINDEX_PENDING": "runtime.backend",
    "EmbeddingRuntime": "providers.runtime",
    "load_settings": "contract.config",
    "plugin_config": "contract.config",
    "open_memory": "runtime.factory",
    "resolve_workspace": "runtime.factory",
    "get_registry": "registry.plugins",
    "TurnMessage": "contract.messages",
    "looks_like_prompt_injection": "agent.lifecycle",
    "untrusted_block": "agent.lifecycle",
    "after_turn": "agent.lifecycle",
    "before_answer": "agent.lifecycle",
    "Reranker": "contract.descriptors",
    "TextGenerator": "contract.text_generator",
    "QueryVectors": "recall.query_vectors",
    "unwrap": "runtime.fallback",
    "CHARS_PER_TOKEN": "retrieval.chunking",
    "remap_lines": "retrieval.chunking",
    "CJK_CLASS": "retrieval.cjk",
    "is_cjk_char": "retrieval.cjk",
    "segment_for_fts": "retrieval.cjk",
    "ScanOutcome": "sources.file_scan",
    "file_scan_search": "sources.file_scan:scan_memory_files",
    "blend_file_similarity": "retrieval.file_similarity",
    "mean_vector": "retrieval.file_similarity",
    "ChunkTerms": "retrieval.fts_query",
    "fts_phrase": "retrieval.fts_query",
    "fts_text_and_terms": "retrieval.fts_query",
    "query_terms": "retrieval.fts_query",
    "extract_keywords": "retrieval.keywords",
    "rank_keyword_only": "retrieval.pipeline",
    "CALIBRATION_ID": "retrieval.calibration",
    "Calibration": "retrieval.calibration",
    "calibrate": "retrieval.calibration",
    "calibration_id": "retrieval.calibration",
    "probe_languages": "retrieval.calibration",
    "MEMORY_DIR": "sources.discovery",
    "ROOT_MEMORY_FILES": "contract.layout",
    "normalize_extra_paths": "sources.discovery",
    "scan_memory_files": "sources.discovery",
    "SessionDeltaTracker": "curation.session_delta",
    "Debouncer": "util.debounce",
    "memory_prompt_section": "agent.prompt",
    "FALLBACK_FILE": "providers.fallback_record",
    "BadArgument": "agent.tool_args",
    "error_text": "agent.tool_args",
    "execute_tool": "agent.tools",
    "optional_int": "agent.tool_args",
    "parse_arguments": "agent.tool_args",
    "tool_definitions": "agent.tools",
    "CliContext": "cli.main:Context",
    "LADDER_STEPS": "providers.runtime",
    "measure_coverage": "retrieval.coverage",
    "stem_weights": "retrieval.coverage",
    "term_weights": "retrieval.coverage",
    "layout_name": "sources.sessions",
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


__getattr__ = lazy_exports(__name__, _LAZY)


__all__ = [
    "ALL_STOPWORDS",
    "CALIBRATION_ID",
    "CHARS_PER_TOKEN",
    "CHUNKER_VERSION",
    "CJK_CLASS",
    "FALLBACK_FILE",
    "FTS_ONLY_MODEL",
    "LADDER_STEPS",
    "MEMORY_DIR",
    "PLUGIN_API_VERSION",
    "READ_ONLY",
    "REINDEX_PENDING",
    "ROOT_MEMORY_FILES",
    "AgentTool",
    "BackendContext",
    "BackendUnavailableError",
    "BadArgument",
    "BaseMemoryManager",
    "CacheStatus",
    "Calibration",
    "Candidate",
    "Chunk",
    "ChunkTerms",
    "CliContext",
    "ConfigError",
    "Debouncer",
    "EmbeddingProvider",
    "EmbeddingProviderSpec",
    "EmbeddingRuntime",
    "FallbackStatus",
    "FtsQuery",
    "FtsStatus",
    "InvalidArgumentError",
    "Matrix",
    "MemoryBackend",
    "MemorySearchManager",
    "MemorySearchResult",
    "MemoryStatus",
    "MemwellError",
    "MemwellSettings",
    "ParsedQuery",
    "PathNotAllowedError",
    "PluginError",
    "ProbeResult",
    "ProgressCallback",
    "ProviderContext",
    "ProviderError",
    "ProviderUnavailableError",
    "QueryVectors",
    "ReadFileResult",
    "Record",
    "RemoteEmbeddingProvider",
    "RemoteEndpoint",
    "Reranker",
    "RerankerSpec",
    "ScanOutcome",
    "ScannedFile",
    "SearchBackend",
    "SearchDegradation",
    "SearchMode",
    "SearchOptions",
    "SearchRequest",
    "SessionDeltaTracker",
    "SourceCount",
    "SyncProgress",
    "TextGenerator",
    "TextGeneratorSpec",
    "ToolHints",
    "TurnMessage",
    "Vector",
    "VectorStatus",
    "after_turn",
    "before_answer",
    "blend_file_similarity",
    "bm25_rank_to_score",
    "build_fts_query",
    "calibrate",
    "calibration_id",
    "chunk_ids",
    "chunk_markdown",
    "citations_enabled",
    "clamp01",
    "enforce_input_limit",
    "error_text",
    "execute_tool",
    "extract_keywords",
    "field_error",
    "file_scan_search",
    "floor_vector_only",
    "format_citation",
    "fts_phrase",
    "fts_text_and_terms",
    "fuse_hybrid",
    "get_registry",
    "hookimpl",
    "is_cjk_char",
    "keyword_boost",
    "keyword_floor",
    "layout_name",
    "list_memory_files",
    "list_session_files",
    "load_settings",
    "looks_like_prompt_injection",
    "mean_vector",
    "measure_coverage",
    "memory_prompt_section",
    "normalize_extra_paths",
    "open_memory",
    "optional_int",
    "parse_arguments",
    "parse_session_jsonl",
    "plugin_config",
    "plugin_settings",
    "probe_languages",
    "query_terms",
    "rank_candidates",
    "rank_keyword_only",
    "ranked_order",
    "read_memory_file",
    "read_source_file",
    "redact",
    "remap_lines",
    "remote_provider_spec",
    "resolve_workspace",
    "scan_memory_files",
    "segment_for_fts",
    "segment_for_index",
    "segment_query_terms",
    "session_entry_hash",
    "sha256_hex",
    "stat_source_file",
    "stem_weights",
    "term_weights",
    "to_results",
    "tokenize",
    "tool_definitions",
    "truncate_snippet",
    "untrusted_block",
    "unwrap",
]
