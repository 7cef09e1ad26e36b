"""``PostgresMemoryManager``: memwell's manager contract on a shared Postgres database."""

from __future__ import annotations

import os
import threading
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from memwell.descriptors import BackendContext
from memwell.errors import BackendUnavailableError
from memwell.manager import BaseMemoryManager, ProgressCallback
from memwell.models import (
    FtsStatus,
    MemorySearchResult,
    MemoryStatus,
    ProbeResult,
    ReadFileResult,
    SourceCount,
    VectorStatus,
)
from memwell.retrieval.candidate import Candidate
from memwell.retrieval.fts_query import keyword_boost
from memwell.retrieval.pipeline import fuse_hybrid, keyword_floor, rank_candidates
from memwell.retrieval.query_limit import bound_query
from memwell.retrieval.snippets import citations_enabled, to_results
from memwell.sources.paths import read_memory_file

from .config import PostgresConfig
from .db import Database
from .indexer import Indexer, SyncReport
from .lexemes import query_terms
from .search import run_search
from .store import SOURCE, Store

BACKEND_NAME = "postgres"


def _scale_keyword(keyword: Sequence[Candidate], *, relative: bool) -> None:
    """BM25 to [0, 1]: relative to the best hit (hybrid) or ``s / (1 + s)`` (keyword-only),
    as the builtin backend scales FTS5's ranks."""
    best = max((c.text_score for c in keyword), default=0.0)
    for cand in keyword:
        raw = cand.text_score
        cand.text_score = (raw / best if best > 0 else 0.0) if relative else raw / (1 + raw)
        cand.score = cand.text_score


class PostgresMemoryManager(BaseMemoryManager):
    """Markdown memory indexed into one namespace of a Postgres database.

    Many managers, on one host or many, may share a namespace: see the plugin README for the
    supported deployments.
    """

    def __init__(self, ctx: BackendContext, config: PostgresConfig | None = None) -> None:
        self.workspace = ctx.workspace
        self.settings = ctx.settings
        self.runtime = ctx.embeddings
        self.config = config or PostgresConfig()
        self.namespace = self.config.namespace_for(self.workspace)
        self.db = Database(self.config)
        self.store = Store(self.config.schema_name, self.namespace)
        self.indexer = Indexer(
            self.db, self.store, self.workspace, self.settings, self.runtime, self.config
        )
        self._lock = threading.RLock()
        self.closed = False
        self.last_sync_error: str | None = None
        self.last_sync: SyncReport | None = None
        self._synced = False

    # -- sync -------------------------------------------------------------------------------

    def sync(
        self,
        *,
        reason: str = "manual",
        force: bool = False,
        progress: ProgressCallback | None = None,
    ) -> None:
        """Bring the namespace up to date with this workspace's Markdown files."""
        self._check_open()
        with self._lock:
            try:
                self.last_sync = self.indexer.sync(force=force, progress=progress)
            except Exception as exc:
                self.last_sync_error = f"{type(exc).__name__}: {exc}"
                raise
            self.last_sync_error = None
            self._synced = True

    # -- search -----------------------------------------------------------------------------

    def _mtime(self, path: str) -> float | None:
        try:
            return os.stat(self.workspace / path).st_mtime
        except OSError:
            return None

    def search(
        self,
        query: str,
        *,
        max_results: int | None = None,
        min_score: float | None = None,
        session_key: str | None = None,
        sources: Sequence[str] | None = None,
    ) -> list[MemorySearchResult]:
        self._check_open()
        max_chars = self.settings.query.max_chars
        text = bound_query(query, max_chars) if isinstance(query, str) else ""
        if not text or (sources is not None and SOURCE not in sources):
            return []
        if self.settings.sync.on_search or not self._synced:
            self.sync(reason="search")
        limit = max(1, max_results or self.settings.query.max_results)
        floor = self.settings.query.min_score if min_score is None else min_score
        hybrid = self.settings.query.hybrid
        pool = min(200, limit * hybrid.candidate_multiplier)
        provider = self.runtime.provider
        use_fts = provider is None or hybrid.enabled
        terms = query_terms(text) if use_fts else None
        vector = self.runtime.embed_query(text) if provider is not None else None
        with self.db.connection() as conn:
            found = run_search(
                conn,
                self.store,
                terms=terms,
                query_vector=vector,
                model=self.indexer.model(),
                limit=pool,
            )
        if provider is None:
            _scale_keyword(found.keyword, relative=False)
            boosted = [
                replace(c, score=min(1.0, c.text_score + keyword_boost(text, c.text, c.path)))
                for c in found.keyword
            ]
            ranked = keyword_floor(
                rank_candidates(boosted, hybrid, mtime_of=self._mtime), floor, limit
            )
        elif not use_fts:
            ranked = [c for c in found.vector if c.score >= floor][:limit]
        else:
            _scale_keyword(found.keyword, relative=True)
            ranked = fuse_hybrid(
                found.vector,
                found.keyword,
                hybrid,
                min_score=floor,
                max_results=limit,
                mtime_of=self._mtime,
            )
        return to_results(ranked, citations=citations_enabled(self.settings.citations, session_key))

    def read_file(
        self, rel_path: str, *, from_line: int | None = None, lines: int | None = None
    ) -> ReadFileResult:
        return read_memory_file(
            self.workspace,
            rel_path,
            from_line=from_line,
            lines=lines,
            extra_paths=self.settings.extra_paths,
        )

    # -- status and probes ------------------------------------------------------------------

    def status(self) -> MemoryStatus:
        self._check_open()
        fields: dict[str, Any] = {"provider": "none", "search_mode": "fts-only"}
        try:
            provider = self.runtime.provider
        except Exception as exc:
            provider = None
            fields.update(search_mode="disabled", provider_unavailable_reason=str(exc))
        if provider is not None:
            fields.update(provider=provider.id, model=provider.model, search_mode="hybrid")
        with self.db.connection() as conn:
            files, chunks, vectors = self.store.counts(conn)
            active = self.store.active(conn)
        report = self.last_sync
        custom: dict[str, Any] = {
            "namespace": self.namespace,
            "server": self.db.where,
            "schema": self.config.schema_name,
            "host_id": self.indexer.host,
            "generation": None if active is None else active.generation,
        }
        if report is not None:
            custom["last_sync"] = {
                "rebuilt": report.rebuilt,
                "written": report.written,
                "deleted": report.deleted,
                "embedded": report.embedded,
                "from_shared_cache": report.cached,
                "kept_files_of_other_hosts": report.kept_foreign,
                "skipped_older_copies": report.skipped_newer,
                "notes": report.notes,
            }
        hybrid = fields["search_mode"] == "hybrid"
        return MemoryStatus(
            backend=BACKEND_NAME,
            query_max_chars=self.settings.query.max_chars,
            requested_provider=self.settings.provider,
            files=files,
            chunks=chunks,
            vectors=vectors if hybrid else None,
            workspace_dir=str(self.workspace),
            db_path=f"postgresql://{self.db.where} namespace={self.namespace}",
            extra_paths=list(self.settings.extra_paths),
            source_counts=[SourceCount(source=SOURCE, files=files, chunks=chunks)],
            fts=FtsStatus(enabled=True, available=True, tokenizer="memwell-bm25"),
            vector=VectorStatus(
                enabled=hybrid, available=hybrid, engine="pgvector-hnsw", dims=self.runtime.dims
            )
            if hybrid
            else None,
            last_sync_error=self.last_sync_error,
            custom=custom,
            **fields,
        )

    def probe_embedding(self) -> ProbeResult:
        try:
            if self.runtime.provider is None:
                return ProbeResult(ok=False, error="no embedding provider (keyword-only mode)")
            self.runtime.embed_documents(["ping"])
        except Exception as exc:
            return ProbeResult(ok=False, error=f"{type(exc).__name__}: {exc}")
        return ProbeResult(ok=True)

    def probe_vector(self) -> ProbeResult:
        try:
            with self.db.connection() as conn:
                conn.execute("SELECT '[1,0]'::vector <=> '[0,1]'::vector").fetchone()
        except Exception as exc:
            return ProbeResult(ok=False, error=f"{type(exc).__name__}: {exc}")
        return self.probe_embedding()

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            self.db.close()

    def _check_open(self) -> None:
        if self.closed:
            raise BackendUnavailableError("memory manager is closed")
