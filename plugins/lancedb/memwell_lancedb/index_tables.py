"""The Markdown index's two LanceDB tables: their names, schemas and metadata, the files they
cover, their counts, and what the last sync did.

``<ns>files`` holds one row per indexed file (hash, mtime, size); ``<ns>chunks`` one row per
chunk with its text, a CJK-segmented copy for the full-text index, and (with a provider) a
unit vector. :class:`IndexTables` is the base of :class:`~memwell_lancedb.index.DocumentIndex`:
:mod:`~memwell_lancedb.indexing` writes the tables, :mod:`~memwell_lancedb.searching` reads them.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa  # type: ignore[import-untyped,unused-ignore]
from memwell.plugin import (
    CHUNKER_VERSION,
    FTS_ONLY_MODEL,
    EmbeddingRuntime,
    MemwellSettings,
    list_memory_files,
    list_session_files,
    sha256_hex,
    stat_source_file,
)

from .db import LanceDatabase, Table, sql_literal, vector_type

SCHEMA_VERSION = 1
FTS_COLUMN = "fts_text"

FILES_SCHEMA = pa.schema(
    [
        ("path", pa.string()),
        ("source", pa.string()),
        ("hash", pa.string()),
        ("mtime_ns", pa.int64()),
        ("size", pa.int64()),
    ]
)


def chunks_schema(dims: int | None) -> pa.Schema:
    """The chunks table's schema; ``dims=None`` (keyword-only mode) has no vector column."""
    fields = [
        ("id", pa.string()),
        ("path", pa.string()),
        ("source", pa.string()),
        ("start_line", pa.int32()),
        ("end_line", pa.int32()),
        ("hash", pa.string()),
        ("text", pa.string()),
        (FTS_COLUMN, pa.string()),
    ]
    if dims is not None:
        fields.append(("vector", vector_type(dims)))
    return pa.schema(fields)


@dataclass
class SyncStats:
    """What a sync did (shown in the status as ``last_sync``)."""

    scanned: int = 0
    indexed: int = 0
    restatted: int = 0
    removed: int = 0
    embedded: int = 0
    reused: int = 0
    full: bool = False
    reason: str | None = None


class IndexTables:
    """The workspace's Markdown (and session transcripts) in two LanceDB tables."""

    def __init__(
        self,
        db: LanceDatabase,
        settings: MemwellSettings,
        runtime: EmbeddingRuntime,
        workspace: Path,
        namespace: str = "",
    ) -> None:
        self.db = db
        self.settings = settings
        self.runtime = runtime
        self.workspace = workspace
        prefix = f"{namespace}__" if namespace else ""
        self.chunks_name = f"{prefix}chunks"
        self.files_name = f"{prefix}files"
        self.meta_key = f"{prefix}index"
        self._sync_lock = threading.Lock()
        self.last_stats: SyncStats | None = None

    def sessions_dir(self) -> Path:
        return (self.workspace / self.settings.sessions_dir).resolve()

    def expected_meta(self) -> dict[str, Any]:
        """What the index must have been built with to be reused incrementally."""
        provider = self.runtime.provider
        extras = sorted(
            (self.workspace / p).resolve().as_posix() for p in self.settings.extra_paths
        )
        return {
            "schema_version": SCHEMA_VERSION,
            "provider": provider.id if provider else "none",
            "model": provider.model if provider else FTS_ONLY_MODEL,
            "provider_key": self.runtime.provider_key(),
            "chunk_tokens": self.settings.chunking.tokens,
            "chunk_overlap": self.settings.chunking.overlap,
            "chunker": CHUNKER_VERSION,
            "sources": sorted(self.settings.sources),
            "scope_hash": sha256_hex(repr((extras, self.sessions_dir().as_posix()))),
        }

    def meta(self) -> dict[str, Any] | None:
        return self.db.get_meta(self.meta_key)

    def rebuild_reason(self, meta: dict[str, Any] | None) -> str | None:
        """Why the index must be rebuilt from scratch, or ``None`` if it can be updated."""
        if meta is None:
            return "no index yet"
        if self.db.open(self.chunks_name) is None or self.db.open(self.files_name) is None:
            return "index tables missing"
        for key, value in self.expected_meta().items():
            if meta.get(key) != value:
                return f"{key} changed"
        if self.runtime.provider is not None and meta.get("dims") is None:
            return "vectors missing"
        if not self._has_fts_index(self.db.open(self.chunks_name)):
            return "full-text index missing"
        return None

    @staticmethod
    def _has_fts_index(table: Table) -> bool:
        return any(FTS_COLUMN in index.columns for index in table.list_indices())

    def _discover(self) -> list[tuple[Path, str]]:
        """Every indexable file with its source."""
        found = [
            (p, "memory") for p in list_memory_files(self.workspace, self.settings.extra_paths)
        ]
        if "sessions" in self.settings.sources:
            found += [(p, "sessions") for p in list_session_files(self.sessions_dir())]
        return found

    def stat_fingerprint(self) -> tuple[tuple[str, int, int], ...]:
        """(path, mtime, size) of every present file: cheap change detection without reads."""
        folder = self.sessions_dir()
        stats = (stat_source_file(p, self.workspace, s, folder) for p, s in self._discover())
        return tuple(sorted(s for s in stats if s is not None))

    def counts(self) -> tuple[list[tuple[str, int, int]], int]:
        """Per source ``(source, files, chunks)``, and the number of chunk vectors."""
        files, chunks = self.db.open(self.files_name), self.db.open(self.chunks_name)
        if files is None or chunks is None:
            return [], 0
        out: list[tuple[str, int, int]] = []
        for source in self.settings.sources:
            where = f"source = {sql_literal(source)}"
            out.append((source, int(files.count_rows(where)), int(chunks.count_rows(where))))
        vectors = int(chunks.count_rows()) if "vector" in chunks.schema.names else 0
        return out, vectors

    def vectors_usable(self, meta: dict[str, Any] | None) -> bool:
        """Whether the stored vectors belong to the active provider's vector space."""
        return (
            self.runtime.provider is not None
            and meta is not None
            and meta.get("provider_key") == self.runtime.provider_key()
            and meta.get("dims") is not None
        )
