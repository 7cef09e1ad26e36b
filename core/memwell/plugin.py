"""Everything a plugin needs, in one import: ``from memwell import plugin as mw`` or
``from memwell.plugin import hookimpl, SearchBackend, ...``.

The names here are the supported plugin API (:data:`PLUGIN_API_VERSION`); anything reached
through other modules may change without notice. Provider helpers that need NumPy
(:class:`EmbeddingProvider`, :data:`Vector`, the remote-provider helpers) load on first use, so
a plugin module that imports this stays cheap for commands that never embed.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, TypeVar

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
from .lazy_import import lazy_exports
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
    from .agent import (
        TurnMessage,
        after_turn,
        before_answer,
        looks_like_prompt_injection,
        untrusted_block,
    )
    from .backend import (
        FTS_ONLY_MODEL,
        REINDEX_PENDING,
    )
    from .cli.main import (
        Context as CliContext,
    )
    from .config import (
        load_settings,
        plugin_config,
    )
    from .curation.session_delta import (
        SessionDeltaTracker,
    )
    from .debounce import (
        Debouncer,
    )
    from .descriptors import (
        READ_ONLY,
        RerankerSpec,
        TextGeneratorSpec,
        ToolHints,
    )
    from .embedding_runtime import (
        LADDER_STEPS,
        EmbeddingRuntime,
    )
    from .embeddings import (
        EmbeddingProvider,
        Matrix,
        Vector,
    )
    from .errors import (
        InvalidArgumentError,
    )
    from .factory import (
        open_memory,
        resolve_workspace,
    )
    from .models import (
        SearchDegradation,
        SearchMode,
    )
    from .plugins import (
        get_registry,
    )
    from .prompt import (
        memory_prompt_section,
    )
    from .provider_fallback import (
        FALLBACK_FILE,
    )
    from .recall.manager import (
        unwrap,
    )
    from .recall.query_vectors import (
        QueryVectors,
    )
    from .remote import (
        RemoteEmbeddingProvider,
        RemoteEndpoint,
        remote_provider_spec,
    )
    from .rerank import (
        Reranker,
    )
    from .retrieval.calibration import (
        CALIBRATION_ID,
        Calibration,
        calibrate,
        calibration_id,
        probe_languages,
    )
    from .retrieval.chunking import (
        CHARS_PER_TOKEN,
        remap_lines,
    )
    from .retrieval.cjk import (
        CJK_CLASS,
        is_cjk_char,
        segment_for_fts,
    )
    from .retrieval.coverage import measure_coverage, term_weights
    from .retrieval.file_scan import (
        ScanOutcome,
    )
    from .retrieval.file_scan import (
        scan_memory_files as file_scan_search,
    )
    from .retrieval.file_similarity import (
        blend_file_similarity,
        mean_vector,
    )
    from .retrieval.fts_query import (
        ChunkTerms,
        fts_phrase,
        fts_text_and_terms,
        query_terms,
    )
    from .retrieval.keywords import (
        extract_keywords,
    )
    from .retrieval.pipeline import (
        rank_keyword_only,
    )
    from .sources.discovery import (
        MEMORY_DIR,
        ROOT_MEMORY_FILES,
        normalize_extra_paths,
        scan_memory_files,
    )
    from .sources.sessions import layout_name
    from .textgen.base import (
        TextGenerator,
    )
    from .tools import (
        BadArgument,
        error_text,
        execute_tool,
        optional_int,
        parse_arguments,
        tool_definitions,
    )

_LAZY = {  # name -> "module" or "module:attribute", imported on first use
    "EmbeddingProvider": "embeddings",
    "Matrix": "embeddings",
    "Vector": "embeddings",
    "RemoteEmbeddingProvider": "remote",
    "RemoteEndpoint": "remote",
    "remote_provider_spec": "remote",
    "READ_ONLY": "descriptors",
    "RerankerSpec": "descriptors",
    "TextGeneratorSpec": "descriptors",
    "ToolHints": "descriptors",
    "InvalidArgumentError": "errors",
    "SearchDegradation": "models",
    "SearchMode": "models",
    "FTS_ONLY_MODEL": "backend",
    "REINDEX_PENDING": "backend",
    "EmbeddingRuntime": "embedding_runtime",
    "load_settings": "config",
    "plugin_config": "config",
    "open_memory": "factory",
    "resolve_workspace": "factory",
    "get_registry": "plugins",
    "TurnMessage": "agent",
    "looks_like_prompt_injection": "agent",
    "untrusted_block": "agent",
    "after_turn": "agent",
    "before_answer": "agent",
    "Reranker": "rerank",
    "TextGenerator": "textgen.base",
    "QueryVectors": "recall.query_vectors",
    "unwrap": "recall.manager",
    "CHARS_PER_TOKEN": "retrieval.chunking",
    "remap_lines": "retrieval.chunking",
    "CJK_CLASS": "retrieval.cjk",
    "is_cjk_char": "retrieval.cjk",
    "segment_for_fts": "retrieval.cjk",
    "ScanOutcome": "retrieval.file_scan",
    "file_scan_search": "retrieval.file_scan:scan_memory_files",
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
    "ROOT_MEMORY_FILES": "sources.discovery",
    "normalize_extra_paths": "sources.discovery",
    "scan_memory_files": "sources.discovery",
    "SessionDeltaTracker": "curation.session_delta",
    "Debouncer": "debounce",
    "memory_prompt_section": "prompt",
    "FALLBACK_FILE": "provider_fallback",
    "BadArgument": "tools",
    "error_text": "tools",
    "execute_tool": "tools",
    "optional_int": "tools",
    "parse_arguments": "tools",
    "tool_definitions": "tools",
    "CliContext": "cli.main:Context",
    "LADDER_STEPS": "embedding_runtime",
    "measure_coverage": "retrieval.coverage",
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
    "term_weights",
    "to_results",
    "tokenize",
    "tool_definitions",
    "truncate_snippet",
    "untrusted_block",
    "unwrap",
]
