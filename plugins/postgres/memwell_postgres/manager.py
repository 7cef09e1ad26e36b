"""``PostgresMemoryManager``: memwell's manager contract on a shared Postgres database.

:class:`~memwell.runtime.backend.MemoryBackend` owns the lifecycle (closed flag, last sync error,
search preamble and citations, safe reads, status skeleton, probes, async wrappers); this
module adds the database, the indexer and the search statement.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from memwell.plugin import (
    BackendContext,
    Candidate,
    FtsStatus,
    MemoryBackend,
    ProbeResult,
    ProgressCallback,
    SearchRequest,
    SourceCount,
    VectorStatus,
    measure_coverage,
    rank_keyword_only,
    stem_weights,
)

from .config import PostgresConfig
from .db import Database
from .indexer import Indexer, SyncReport
from .lexemes import query_terms, terms_of
from .search import Active, run_search
from .store import SOURCE, Store

log = logging.getLogger(__name__)


def _scale_keyword(keyword: Sequence[Candidate], *, relative: bool) -> None:
    """BM25 to [0, 1]: relative to the best hit (hybrid) or ``s / (1 + s)`` (keyword-only),
    as the builtin backend scales FTS5's ranks."""
    best = max((c.text_score for c in keyword), default=0.0)
    for cand in keyword:
        raw = cand.text_score
        cand.text_score = (raw / best if best > 0 else 0.0) if relative else raw / (1 + raw)
        cand.score = cand.text_score


def with_cosines(
    vector: Sequence[Candidate], keyword: Sequence[Candidate], cosines: dict[str, float]
) -> list[Candidate]:
    """``vector`` and, after it, the keyword candidates outside it with their exact cosine
    (best first), as the builtin backend fuses them: a keyword hit beyond the nearest
    chunks is not fused as if its similarity were 0."""
    seen = {c.id for c in vector}
    filled = [
        replace(c, vector_score=cosines[c.id], text_score=0.0, score=cosines[c.id])
        for c in keyword
        if c.id not in seen and c.id in cosines
    ]
    return [*vector, *sorted(filled, key=lambda c: c.vector_score, reverse=True)]


def _sync_summary(report: SyncReport) -> dict[str, Any]:
    return {
        "rebuilt": report.rebuilt,
        "written": report.written,
        "deleted": report.deleted,
        "embedded": report.embedded,
        "from_shared_cache": report.cached,
        "kept_files_of_other_hosts": report.kept_foreign,
        "skipped_older_copies": report.skipped_newer,
        "notes": report.notes,
    }


class PostgresMemoryManager(MemoryBackend):
    """Markdown memory indexed into one namespace of a Postgres database.

    Many managers, on one host or many, may share a namespace: see the plugin README for the
    supported deployments. A search syncs first only when ``sync.on_search`` asks for it;
    otherwise it answers from the namespace as it stands (and says so when it is empty).
    """

    name = "postgres"

    def __init__(self, ctx: BackendContext, config: PostgresConfig | None = None) -> None:
        super().__init__(ctx)
        self.config = config or PostgresConfig()
        self.namespace = self.config.namespace_for(self.workspace)
        self.db = Database(self.config)
        self.store = Store(self.config.schema_name, self.namespace)
        self.indexer = Indexer(
            self.db, self.store, self.workspace, self.settings, self.runtime, self.config
        )
        self.last_sync: SyncReport | None = None
        self.active: Active | None = None
        self.migration = self.indexer.ensure_postings()

    def _sync(self, *, reason: str, force: bool, progress: ProgressCallback | None) -> None:
        self.last_sync = self.indexer.sync(force=force, progress=progress)

    def _search(self, request: SearchRequest) -> list[Candidate]:
        provider = self.runtime.provider
        use_fts = provider is None or request.hybrid.enabled
        terms = query_terms(request.query) if use_fts else None
        vector = self.runtime.embed_query(request.query) if provider is not None else None
        with self.db.connection(ef_search=max(self.config.ef_search, request.pool)) as conn:
            found, self.active = run_search(
                conn,
                self.store,
                self.active,
                terms=terms,
                query_vector=vector,
                model=self.indexer.model(),
                limit=request.pool,
                exact_below=self.config.exact_search_below,
            )
        if not found.indexed:
            log.warning(
                "memwell: postgres namespace %r on %s has no index yet (searched without "
                "syncing): run `memwell index` in a workspace that holds its files",
                self.namespace,
                self.db.where,
            )
        if provider is None:
            _scale_keyword(found.keyword, relative=False)
            return rank_keyword_only(
                found.keyword,
                request.query,
                request.hybrid,
                min_score=request.min_score,
                max_results=request.limit,
                mtime_of=self.mtime_of,
            )
        if not use_fts:
            return self.rank_vector_only(found.vector, request, vector)
        _scale_keyword(found.keyword, relative=True)
        if request.hybrid.coverage_power > 0:
            total = self.active.chunks if self.active is not None else 0
            weights = stem_weights(found.frequencies, total)
            measure_coverage(found.keyword, weights, held=lambda c: terms_of(c.text))
        vector_side = with_cosines(found.vector, found.keyword, found.cosines)
        return self.rank_hybrid(vector_side, found.keyword, request, vector)

    def _index_status(self) -> dict[str, Any]:
        self.check_open()
        with self.db.connection() as conn:
            files, chunks, vectors = self.store.counts(conn)
            active = self.store.active(conn)
        custom: dict[str, Any] = {
            "namespace": self.namespace,
            "server": self.db.where,
            "schema": self.config.schema_name,
            "host_id": self.indexer.host,
            "generation": None if active is None else active.generation,
            "keyword_index": "postings (MaxScore BM25)",
        }
        if self.migration is not None:
            custom["migrated"] = self.migration
        if self.last_sync is not None:
            custom["last_sync"] = _sync_summary(self.last_sync)
        try:
            hybrid = self.runtime.provider is not None
        except Exception:  # the skeleton reports why the provider is unavailable
            hybrid = False
        vector = VectorStatus(
            enabled=True, available=True, engine="pgvector-hnsw", dims=self.runtime.dims
        )
        return {
            "files": files,
            "chunks": chunks,
            "vectors": vectors,
            "db_path": f"postgresql://{self.db.where} namespace={self.namespace}",
            "source_counts": [SourceCount(source=SOURCE, files=files, chunks=chunks)],
            "fts": FtsStatus(enabled=True, available=True, tokenizer="memwell-bm25"),
            "vector": vector if hybrid else None,
            "custom": custom,
        }

    def probe_vector(self) -> ProbeResult:
        """The server computes a cosine distance with pgvector, then the provider embeds."""
        try:
            with self.db.connection() as conn:
                conn.execute("SELECT '[1,0]'::vector <=> '[0,1]'::vector").fetchone()
        except Exception as exc:
            return ProbeResult(ok=False, error=f"{type(exc).__name__}: {exc}")
        return super().probe_vector()

    def _close(self) -> None:
        self.db.close()
