"""The Markdown index: files and chunks tables kept in sync with the workspace by content hash.

``<ns>files`` holds one row per indexed file (hash, mtime, size); ``<ns>chunks`` one row per
chunk with its text, a CJK-segmented copy for the full-text index, and (with a provider) a
unit vector. A sync re-reads only files whose mtime or size changed, re-chunks only files
whose hash changed, embeds only chunk texts not already in the table, and writes every
change to the chunks table in one atomic ``merge_insert`` commit. A change of provider,
model, chunking or scope rebuilds both tables, each in one ``overwrite`` commit, so readers
see the old index or the new one, never half of one.
"""

from __future__ import annotations

import functools
import hashlib
import logging
import re
import threading
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa  # type: ignore[import-untyped,unused-ignore]
from lancedb.index import FTS  # type: ignore[import-untyped,unused-ignore]
from lancedb.query import MatchQuery  # type: ignore[import-untyped,unused-ignore]
from memwell.config import MemwellSettings
from memwell.embedding_runtime import EmbeddingRuntime
from memwell.embeddings import Vector
from memwell.manager import ProgressCallback
from memwell.models import SyncProgress
from memwell.retrieval.candidate import Candidate
from memwell.retrieval.chunking import (
    CHUNKER_VERSION,
    Chunk,
    chunk_markdown,
    remap_lines,
    sha256_hex,
)
from memwell.retrieval.cjk import CJK_CLASS, segment_for_index, segment_query_terms
from memwell.retrieval.hybrid import clamp01
from memwell.retrieval.limits import enforce_input_limit
from memwell.retrieval.pipeline import fuse_hybrid, keyword_floor, rank_candidates
from memwell.sources.discovery import list_memory_files, read_source_file, stat_source_file
from memwell.sources.sessions import list_session_files, parse_session_jsonl, session_entry_hash

from .db import LanceDatabase, Table, arrow_rows, in_filters, sql_literal, vector_type

log = logging.getLogger(__name__)

SCHEMA_VERSION = 1
FTS_COLUMN = "fts_text"
FTS_ONLY_MODEL = "fts-only"
#: Files embedded per progress step during a sync.
FILES_PER_STEP = 64
_WORD = re.compile(r"\w+")
_CJK_RUN = re.compile(f"[{CJK_CLASS}]+")

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


def chunk_id(source: str, path: str, chunk: Chunk, model: str) -> str:
    """Stable id of a chunk: the same text at the same place under the same model."""
    key = f"{source}:{path}:{chunk.start_line}:{chunk.end_line}:{chunk.hash}:{model}"
    return hashlib.sha256(key.encode()).hexdigest()


def bm25_to_score(score: float) -> float:
    """LanceDB's BM25 score (>= 0, higher is better) mapped into [0, 1): ``s / (1 + s)``."""
    return score / (1.0 + score) if score > 0 else 0.0


def keyword_terms(query: str) -> list[str]:
    """Full-text terms: the words outside CJK runs plus the runs' bigrams (see ``cjk``)."""
    words = _WORD.findall(_CJK_RUN.sub(" ", query))
    return [*words, *segment_query_terms(query)]


def candidate_count(max_results: int, multiplier: int) -> int:
    """Candidates each retriever fetches before fusion (24 by default, as the reference)."""
    return min(200, max(1, max_results * multiplier))


@dataclass(frozen=True)
class FileState:
    hash: str
    mtime_ns: int
    size: int


@dataclass
class Scanned:
    """A discovered file: its new state, and its chunks when its content changed."""

    path: str
    source: str
    state: FileState
    chunks: list[Chunk] | None = None


@dataclass
class SyncStats:
    scanned: int = 0
    indexed: int = 0
    restatted: int = 0
    removed: int = 0
    embedded: int = 0
    reused: int = 0
    full: bool = False
    reason: str | None = None


class DocumentIndex:
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

    # -- metadata ---------------------------------------------------------------------------

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

    # -- scanning ---------------------------------------------------------------------------

    def _known_files(self) -> dict[str, FileState]:
        table = self.db.open(self.files_name)
        if table is None:
            return {}
        rows = table.search().select(["path", "hash", "mtime_ns", "size"]).to_arrow().to_pylist()
        return {r["path"]: FileState(r["hash"], r["mtime_ns"], r["size"]) for r in rows}

    def _chunk(self, text: str) -> list[Chunk]:
        cfg = self.settings.chunking
        chunks = chunk_markdown(text, tokens=cfg.tokens, overlap=cfg.overlap)
        if self.runtime.provider is not None:
            chunks = enforce_input_limit(chunks, self.runtime.max_input_tokens())
        return chunks

    def _scan(self, known: dict[str, FileState], stats: SyncStats) -> Iterator[Scanned]:
        """Every present file; ``chunks`` is set only for new or changed content."""
        for abs_path, source in self._discover():
            stats.scanned += 1
            stat = stat_source_file(abs_path, self.workspace, source)
            if stat is None:
                continue
            rel, mtime_ns, size = stat
            old = known.get(rel)
            if old is not None and (old.mtime_ns, old.size) == (mtime_ns, size):
                yield Scanned(rel, source, old)
                continue
            read = read_source_file(abs_path, self.workspace, source)
            if read is None:
                continue
            entry, text = read
            if source == "sessions":
                parsed = parse_session_jsonl(text)
                state = FileState(session_entry_hash(parsed), entry.mtime_ns, entry.size)
                chunks = remap_lines(self._chunk(parsed.content), parsed.line_map)
            else:
                state = FileState(entry.hash, entry.mtime_ns, entry.size)
                chunks = self._chunk(text)
            if old is not None and old.hash == state.hash:
                stats.restatted += 1
                yield Scanned(rel, source, state)
            else:
                yield Scanned(rel, source, state, chunks)

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
        stats = (stat_source_file(p, self.workspace, s) for p, s in self._discover())
        return tuple(sorted(s for s in stats if s is not None))

    # -- embedding --------------------------------------------------------------------------

    def _reusable_vectors(self, hashes: set[str]) -> dict[str, Vector]:
        """Vectors already in the chunks table for these chunk hashes (renames, small edits)."""
        table = self.db.open(self.chunks_name)
        if table is None or not hashes or "vector" not in table.schema.names:
            return {}
        found: dict[str, Vector] = {}
        for where in in_filters("hash", hashes):
            batch = table.search().where(where).select(["hash", "vector"]).to_arrow()
            for h, vec in zip(batch["hash"].to_pylist(), batch["vector"].to_pylist(), strict=True):
                found.setdefault(h, np.asarray(vec, dtype=np.float32))
        return found

    def _embed(
        self,
        files: Sequence[Scanned],
        reuse: bool,
        stats: SyncStats,
        progress: ProgressCallback | None,
    ) -> dict[str, Vector]:
        if self.runtime.provider is None:
            return {}
        wanted = {c.hash: c.text for f in files for c in f.chunks or ()}
        vectors = self._reusable_vectors(set(wanted)) if reuse else {}
        stats.reused += len(vectors)
        for start in range(0, len(files), FILES_PER_STEP):
            group = files[start : start + FILES_PER_STEP]
            missing = {
                c.hash: c.text for f in group for c in f.chunks or () if c.hash not in vectors
            }
            if missing:
                matrix = self.runtime.embed_documents(list(missing.values()))
                vectors.update(zip(missing, matrix, strict=True))
                stats.embedded += len(missing)
            if progress is not None:
                done = start + len(group)
                progress(SyncProgress(completed=done, total=len(files), label="embedding"))
        return vectors

    def _chunk_rows(
        self, files: Sequence[Scanned], vectors: dict[str, Vector]
    ) -> list[dict[str, Any]]:
        model = self.expected_meta()["model"]
        rows: list[dict[str, Any]] = []
        for item in files:
            for chunk in item.chunks or ():
                row: dict[str, Any] = {
                    "id": chunk_id(item.source, item.path, chunk, model),
                    "path": item.path,
                    "source": item.source,
                    "start_line": chunk.start_line,
                    "end_line": chunk.end_line,
                    "hash": chunk.hash,
                    "text": chunk.text,
                    FTS_COLUMN: segment_for_index(chunk.text),
                }
                if vectors:
                    row["vector"] = vectors[chunk.hash]
                rows.append(row)
        return rows

    @staticmethod
    def _file_rows(files: Sequence[Scanned]) -> list[dict[str, Any]]:
        return [
            {
                "path": f.path,
                "source": f.source,
                "hash": f.state.hash,
                "mtime_ns": f.state.mtime_ns,
                "size": f.state.size,
            }
            for f in files
        ]

    # -- sync -------------------------------------------------------------------------------

    def sync(self, *, force: bool = False, progress: ProgressCallback | None = None) -> SyncStats:
        """Bring the tables in line with the files; one sync at a time per index object."""
        with self._sync_lock:
            stats = SyncStats()
            reason = "forced" if force else self.rebuild_reason(self.meta())
            if reason is not None:
                stats.full, stats.reason = True, reason
                self._rebuild(stats, progress)
            else:
                self._update(stats, progress)
            if progress is not None and stats.indexed == 0:
                progress(SyncProgress(completed=0, total=0, label="up to date"))
            self.last_stats = stats
            return stats

    def _rebuild(self, stats: SyncStats, progress: ProgressCallback | None) -> None:
        files = list(self._scan({}, stats))
        vectors = self._embed(files, reuse=False, stats=stats, progress=progress)
        dims: int | None = None
        if self.runtime.provider is not None:
            dims = self.runtime.dims or len(self.runtime.embed_query("dimensions"))
        schema = chunks_schema(dims)
        chunks = self.db.create(
            self.chunks_name, schema, arrow_rows(self._chunk_rows(files, vectors), schema)
        )
        chunks.create_index(FTS_COLUMN, config=FTS(), replace=True)
        self.db.create(
            self.files_name, FILES_SCHEMA, arrow_rows(self._file_rows(files), FILES_SCHEMA)
        )
        self.db.put_meta(self.meta_key, {**self.expected_meta(), "dims": dims})
        stats.indexed = len(files)

    def _update(self, stats: SyncStats, progress: ProgressCallback | None) -> None:
        known = self._known_files()
        present = list(self._scan(known, stats))
        changed = [f for f in present if f.chunks is not None]
        vanished = set(known) - {f.path for f in present}
        rewritten = {f.path for f in changed} | vanished
        if rewritten:
            vectors = self._embed(changed, reuse=True, stats=stats, progress=progress)
            chunks: Table = self.db.open(self.chunks_name)
            rows = arrow_rows(self._chunk_rows(changed, vectors), chunks.schema)
            (
                chunks.merge_insert("id")
                .when_matched_update_all()
                .when_not_matched_insert_all()
                .when_not_matched_by_source_delete(" OR ".join(in_filters("path", rewritten)))
                .execute(rows)
            )
            self._optimize(chunks)
        stats.indexed, stats.removed = len(changed), len(vanished)
        if rewritten or stats.restatted:
            files: Table = self.db.open(self.files_name)
            file_rows = arrow_rows(self._file_rows(present), FILES_SCHEMA)
            (
                files.merge_insert("path")
                .when_matched_update_all()
                .when_not_matched_insert_all()
                .when_not_matched_by_source_delete()
                .execute(file_rows)
            )

    @staticmethod
    def _optimize(table: Table) -> None:
        """Fold new rows into the full-text index and compact small fragments."""
        try:
            table.optimize()
        except Exception as exc:  # another writer may be compacting the same table
            log.info("memwell lancedb: optimize skipped: %s", exc)

    # -- search -----------------------------------------------------------------------------

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

    def _source_filter(self, sources: Sequence[str]) -> str:
        return " OR ".join(in_filters("source", sources))

    def _candidate(self, row: dict[str, Any]) -> Candidate:
        return Candidate(
            id=row["id"],
            path=row["path"],
            start_line=row["start_line"],
            end_line=row["end_line"],
            text=row["text"],
            source=row["source"],
        )

    def keyword(
        self, table: Table, query: str, limit: int, sources: Sequence[str]
    ) -> list[Candidate]:
        terms = keyword_terms(query)
        if not terms:
            return []
        columns = ["id", "path", "source", "start_line", "end_line", "text", "_score"]
        match = MatchQuery(" ".join(terms), FTS_COLUMN)  # type: ignore[call-arg]
        try:
            rows = (
                table.search(match, query_type="fts")
                .where(self._source_filter(sources), prefilter=True)
                .limit(limit)
                .select(columns)
                .to_list()
            )
        except ValueError as exc:  # no full-text index yet: the next sync builds it
            log.warning("memwell lancedb: keyword search unavailable: %s", exc)
            return []
        out = []
        for row in rows:
            cand = self._candidate(row)
            cand.text_score = cand.score = bm25_to_score(float(row["_score"]))
            out.append(cand)
        return out

    def vector(
        self, table: Table, query_vector: Vector, limit: int, sources: Sequence[str]
    ) -> list[Candidate]:
        columns = ["id", "path", "source", "start_line", "end_line", "text", "_distance"]
        rows = (
            table.search(query_vector, vector_column_name="vector")
            .distance_type("cosine")
            .where(self._source_filter(sources), prefilter=True)
            .limit(limit)
            .select(columns)
            .to_list()
        )
        out = []
        for row in rows:
            cand = self._candidate(row)
            cand.vector_score = cand.score = clamp01(1.0 - float(row["_distance"]))
            out.append(cand)
        return out

    def _mtimes(self, paths: set[str]) -> dict[str, float]:
        table = self.db.open(self.files_name)
        if table is None or not paths:
            return {}
        found: dict[str, float] = {}
        for where in in_filters("path", paths):
            for row in table.search().where(where).select(["path", "mtime_ns"]).to_list():
                found[row["path"]] = row["mtime_ns"] / 1e9
        return found

    def _rank(self, items: list[Candidate]) -> list[Candidate]:
        """Decay, sort and MMR as configured; modification times are read once per call."""
        mtimes = functools.cache(lambda: self._mtimes({c.path for c in items}))
        return rank_candidates(
            items, self.settings.query.hybrid, mtime_of=lambda path: mtimes().get(path)
        )

    def search(
        self,
        query: str,
        query_vector: Vector | None,
        *,
        max_results: int,
        min_score: float,
        sources: Sequence[str],
    ) -> list[Candidate]:
        """Keyword and vector candidates, fused, decayed, diversified and filtered.

        Without a query vector this is keyword-only search: BM25 scores, and when nothing
        reaches ``min_score`` the best hits are returned anyway (the reference's floor 0).
        """
        table = self.db.open(self.chunks_name)
        if table is None or not sources:
            return []
        cfg = self.settings.query.hybrid
        limit = candidate_count(max_results, cfg.candidate_multiplier)
        if query_vector is None:
            ranked = self._rank(self.keyword(table, query, limit, sources))
            return keyword_floor(ranked, min_score, max_results)
        vector = self.vector(table, query_vector, limit, sources) if query_vector.any() else []
        if not cfg.enabled:
            return [c for c in vector if c.score >= min_score][:max_results]
        keyword = self.keyword(table, query, limit, sources)
        mtimes = functools.cache(lambda: self._mtimes({c.path for c in [*vector, *keyword]}))
        return fuse_hybrid(
            vector,
            keyword,
            cfg,
            min_score=min_score,
            max_results=max_results,
            mtime_of=lambda path: mtimes().get(path),
        )
