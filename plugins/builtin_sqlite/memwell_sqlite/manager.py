"""``SqliteMemoryManager``: the builtin backend's :class:`~memwell.MemorySearchManager`."""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import msgspec
from memwell.plugin import (
    CHUNKER_VERSION,
    FALLBACK_FILE,
    LADDER_STEPS,
    REINDEX_PENDING,
    BackendContext,
    CacheStatus,
    Calibration,
    Candidate,
    EmbeddingProvider,
    FtsStatus,
    MemoryBackend,
    ProbeResult,
    ProgressCallback,
    ProviderError,
    QueryVectors,
    SearchDegradation,
    SearchMode,
    SearchRequest,
    SessionDeltaTracker,
    SourceCount,
    VectorStatus,
    calibrate,
    calibration_id,
    list_memory_files,
    list_session_files,
    normalize_extra_paths,
    probe_languages,
)
from memwell.plugin_sdk import lazy_logger, lazy_module

from .config import BuiltinConfig
from .faults import Fault, IndexReadOnlyError, classify, disk_full_error
from .index_files import PublishedIndex
from .indexer import FTS_ONLY_MODEL, Indexer, scope_hash, sessions_dir
from .layout import IndexDir
from .search import Searcher
from .store import FTS_DAMAGED, SCHEMA_VERSION, IndexStore
from .vectors import VectorIndex

if TYPE_CHECKING:
    import numpy as np
    from memwell.plugin import Matrix

    from .watcher import MemoryWatcher
else:
    np = lazy_module("numpy")

log = lazy_logger(__name__)


class SqliteMemoryManager(MemoryBackend):
    """Markdown memory indexed in SQLite (FTS5 + vectors) with incremental, crash-safe sync.

    One writer at a time per workspace (a file lock, across processes); any number of
    readers. A full reindex builds a new index file and switches to it atomically, so the old
    index keeps serving until the new one is complete.
    """

    name = "builtin"
    supported_sources = frozenset({"memory", "sessions"})

    def __init__(self, ctx: BackendContext, config: BuiltinConfig | None = None) -> None:
        super().__init__(ctx)
        self.config = config or BuiltinConfig()
        root = self.settings.store.path
        self.index_dir = IndexDir(
            Path(root).expanduser() if root else self.workspace / self.settings.index_dir
        )
        self.runtime.state_path = self.index_dir.root / FALLBACK_FILE
        engine = "numpy" if self.config.vector_engine == "auto" else self.config.vector_engine
        self.vectors = VectorIndex(engine)
        self.searcher = Searcher(self.settings, self.workspace)
        self.query_vectors = QueryVectors(self.runtime)
        self._versioned_store: IndexStore | None = None
        self._reader_opens = 0
        self._meta_cache: tuple[EmbeddingProvider | None, dict[str, Any]] | None = None
        self._state_lock = threading.Lock()
        self._background: threading.Thread | None = None
        self._warm_sessions: set[str] = set()
        self._stop = threading.Event()
        self.generation = 0
        self.dirty = True
        self.last_search_error: str | None = None
        self.files = PublishedIndex(
            self.index_dir,
            self.settings,
            on_damage=self._mark_dirty,
            on_reader_closed=self.vectors.invalidate,
        )
        self.last_degradation: SearchDegradation | None = None
        self.recovered: list[str] = []
        self.unreadable: list[str] | None = None
        """What this process's last sync could not read (``None``: no sync here yet)."""
        self._kept_model_index_said = False
        self._watcher: MemoryWatcher | None = None
        self._interval: threading.Thread | None = None
        self.session_deltas: SessionDeltaTracker | None = None
        if "sessions" in self.settings.sources:
            self.session_deltas = SessionDeltaTracker(self.settings, sync=self._safe_sync)
        if self.purpose == "default":
            self._start_triggers()

    # -- triggers ---------------------------------------------------------------------------

    def _watch_roots(self) -> list[Path]:
        roots = [self.workspace, self.workspace / "memory"]
        roots += [p for p in normalize_extra_paths(self.workspace, self.settings.extra_paths)]
        if "sessions" in self.settings.sources:
            roots.append(sessions_dir(self.settings, self.workspace))
        return roots

    def _start_triggers(self) -> None:
        sync_cfg = self.settings.sync
        if sync_cfg.watch:
            from .watcher import MemoryWatcher  # watchdog: only a watching manager needs it

            self._watcher = MemoryWatcher(
                self.workspace,
                self._watch_roots(),
                ignore=[self.index_dir.root],
                on_dirty=self._mark_dirty,
                on_change=lambda: self.sync(reason="watch"),
                debounce_s=sync_cfg.watch_debounce_ms / 1000,
                transcripts=self._transcript_growth(),
            )
            try:
                self._watcher.start()
            except Exception as exc:
                log.warning("memwell: file watcher unavailable: %s", exc)
                self._watcher = None
        if sync_cfg.interval_minutes > 0:
            self._interval = threading.Thread(
                target=self._interval_loop, name="memwell-interval-sync", daemon=True
            )
            self._interval.start()

    def _transcript_growth(self) -> tuple[Path, Callable[[Path], None]] | None:
        if self.session_deltas is None:
            return None
        return sessions_dir(self.settings, self.workspace), self.session_deltas.schedule

    def _interval_loop(self) -> None:
        period = self.settings.sync.interval_minutes * 60
        while not self._stop.wait(period):
            self._safe_sync("interval")

    def _mark_dirty(self) -> None:
        self.dirty = True

    def _safe_sync(self, reason: str, force: bool = False) -> None:
        try:
            self.sync(reason=reason, force=force)
        except Exception as exc:
            log.warning("memwell %s sync failed: %s", reason, exc)

    def _background_sync(self, reason: str, force: bool = False) -> None:
        with self._state_lock:
            if self._background is not None and self._background.is_alive():
                return
            self._background = threading.Thread(
                target=self._safe_sync, args=(reason, force), name="memwell-sync", daemon=True
            )
            self._background.start()

    # -- index metadata ---------------------------------------------------------------------

    def _expected_meta(self) -> dict[str, Any]:
        """What the index metadata must say for this configuration (cached per provider)."""
        provider = self.runtime.provider
        if self._meta_cache is not None and self._meta_cache[0] is provider:
            return self._meta_cache[1]
        meta = self._compute_meta(provider)
        self._meta_cache = (provider, meta)
        return meta

    def _compute_meta(self, provider: EmbeddingProvider | None) -> dict[str, Any]:
        chunking = self.settings.chunking
        return {
            "model": provider.model if provider else FTS_ONLY_MODEL,
            "provider": provider.id if provider else "none",
            "provider_key": self.runtime.provider_key(),
            "sources": sorted(self.settings.sources),
            "scope_hash": scope_hash(self.settings, self.workspace),
            "chunk_tokens": chunking.tokens,
            "chunk_overlap": chunking.overlap,
            "chunker": CHUNKER_VERSION,
            "fts_tokenizer": self.settings.store.fts.tokenizer,
            "input_limit": self.runtime.input_limit_bytes() if provider else None,
            "chunk_fit": "window-v1",
            "schema_version": SCHEMA_VERSION,
            "calibration": calibration_id(probe_languages(provider)) if provider else None,
        }

    def _needs_full(self, meta: dict[str, Any] | None, store: IndexStore) -> str | None:
        """Why the index must be rebuilt from scratch, or ``None``."""
        if meta is None:
            return "no index metadata"
        for key, value in self._expected_meta().items():
            if meta.get(key) != value:
                return f"{key} changed"
        # Without a model the index has no vectors to mirror (and sqlite-vec need not load).
        if self.runtime.provider is not None and meta.get("vec_mirror") != store.info.vec_loaded:
            return "sqlite-vec availability changed"
        return None

    # -- sync -------------------------------------------------------------------------------

    def _sync(self, *, reason: str, force: bool, progress: ProgressCallback | None) -> None:
        only = self.sync_sources
        try:
            for step in range(LADDER_STEPS + 1):  # a failing provider steps down the ladder
                try:
                    self._sync_once(force, progress, only)
                    return
                except ProviderError as exc:
                    if step == LADDER_STEPS or not self.runtime.activate_fallback(str(exc)):
                        raise
                    rung = "using fallback" if self.runtime.provider else "keyword-only search"
                    log.warning("memwell: embedding provider failed (%s); %s", exc, rung)
                    only, force = None, True  # a fallback re-embeds, keyword-only rebuilds
        except Exception as exc:
            if self.files.out_of_space(exc):
                raise disk_full_error(exc, str(self.index_dir.root)) from exc
            raise

    def _sync_once(
        self, force: bool, progress: ProgressCallback | None, only: frozenset[str] | None = None
    ) -> None:
        if not self.index_dir.writable():
            raise IndexReadOnlyError(
                f"index directory {self.index_dir.root} is read-only: cannot sync "
                "(search the existing index with --no-sync)"
            )
        if only is None:
            self.dirty = False
        with self.index_dir.write_lock():
            opened = self.files.open_for_sync()
            if opened is None:
                self._full_reindex(None, progress)
            else:
                self._update(*opened, force=force, progress=progress, only=only)
            self.generation += 1
        self.vectors.invalidate()
        if self.session_deltas is not None:
            self.session_deltas.synced(
                list_session_files(sessions_dir(self.settings, self.workspace))
            )

    def _update(
        self,
        path: Path,
        store: IndexStore,
        meta: dict[str, Any] | None,
        *,
        force: bool,
        progress: ProgressCallback | None,
        only: frozenset[str] | None = None,
    ) -> None:
        """Sync the opened published index: incrementally (only the ``only`` sources, if
        given), or by a rebuild when one is due (forced, configuration changed, or the
        incremental pass found it damaged)."""
        old: Path | None = path
        try:
            if not force and self._keeps_model_index(meta):
                return
            if not force and self._needs_full(meta, store) is None:
                try:
                    indexer = Indexer(store, self.settings, self.runtime, self.workspace)
                    errors = indexer.run(full=False, progress=progress, sources=only).errors
                    if only is not None:
                        return
                    self.unreadable = errors
                    if meta is not None and self.unreadable != meta.get("unreadable", []):
                        store.write_meta({**meta, "unreadable": self.unreadable})  # for status
                    return
                except Exception as exc:
                    if classify(exc) is not Fault.CORRUPT:
                        raise
                    store.close()
                    self.files.quarantine(path, f"{type(exc).__name__}: {exc}")
                    old = None
        finally:
            store.close()
        self._full_reindex(old, progress, meta)

    def _keeps_model_index(self, meta: dict[str, Any] | None) -> bool:
        """Keyword-only mode over an index built with a model: use it as it is.

        Rebuilding it without vectors would throw them away and make the next search with
        the model re-embed everything; updating it would leave changed files without
        vectors. So it is neither, and that is said once. Not on the provider ladder's last
        rung (keyword-only because the provider and its fallback failed, for as long as they
        do): there the index is rebuilt keyword-only, so writes stay searchable, and the
        embedding cache it keeps spares the re-embedding when a provider is back.
        """
        model = (meta or {}).get("model")
        if self.runtime.provider is not None or model in (None, FTS_ONLY_MODEL):
            return False
        if self.runtime.selection().fallback is not None:
            return False
        if not self._kept_model_index_said:
            self._kept_model_index_said = True
            log.warning(
                "memwell: keyword-only search; files changed since the last run with %s "
                "are not indexed.",
                model,
            )
        return True

    def _calibration_params(self, previous: dict[str, Any]) -> dict[str, Any] | None:
        """The provider's score calibration (memwell.retrieval.calibration), or ``None``.

        Measured once per vector space: a rebuild for the same provider and method keeps the
        published index's measurement.
        """
        if self.runtime.provider is None:
            return None
        languages = probe_languages(self.runtime.provider)
        kept = Calibration.from_json(previous.get("calibration_params"))
        same_space = previous.get("provider_key") == self.runtime.provider_key()
        if kept is not None and same_space and kept.id == calibration_id(languages):
            return kept.to_json()
        measured = calibrate(self.runtime.embed_queries, self.runtime.embed_documents, languages)
        if measured is None:
            log.warning(
                "memwell: %s rates no probe answer above unrelated text; its scores are raw "
                "cosines (uncalibrated)",
                self.runtime.provider.model,
            )
            return None
        return measured.to_json()

    def _full_reindex(
        self,
        old: Path | None,
        progress: ProgressCallback | None,
        old_meta: dict[str, Any] | None = None,
    ) -> None:
        """Build a new generation next to the old one (whose metadata is ``old_meta``) and
        switch to it atomically."""
        new_path = self.index_dir.new_generation()
        store = self.files.open_store(new_path)
        try:
            if old is not None and self.settings.cache.enabled:
                try:
                    store.copy_cache_from(old)
                except Exception as exc:
                    if classify(exc) is not Fault.CORRUPT:
                        raise
                    log.warning("memwell: not reusing the damaged embedding cache: %s", exc)
            indexer = Indexer(store, self.settings, self.runtime, self.workspace)
            self.unreadable = indexer.run(full=True, progress=progress).errors
            with_model = self.runtime.provider is not None
            # Only a model's vectors are mirrored: without one, sqlite-vec need not load.
            mirror = store.info.vec_loaded if with_model else None
            store.write_meta(
                {
                    **self._expected_meta(),
                    "calibration_params": self._calibration_params(old_meta or {}),
                    "vector_dims": self.runtime.dims if with_model else None,
                    "vec_mirror": mirror,
                    "unreadable": self.unreadable,
                }
            )
            store.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        except BaseException:
            store.close()
            self.index_dir.discard(new_path)
            raise
        store.close()
        self.index_dir.publish(new_path)
        with self.files.lock:
            if self.files.reader is not None and self.files.reader.path != new_path:
                self.files.close_reader()
        self.index_dir.cleanup()

    # -- search -----------------------------------------------------------------------------

    def _bootstrap_if_empty(self) -> None:
        """Index an empty workspace index before its first search.

        An open reader that holds chunks answers without reading the generation pointer (the
        search reads it right after; a newer, empty generation is seen on the next search).
        """
        with self.files.lock:
            store = self.files.reader
            try:
                if store is not None and store.has_chunks():
                    return
                store = self.files.reader_store()
                empty = store is None or not store.has_chunks()
            except Exception as exc:
                self.files.query_failed(exc)
                empty = True
        if empty and (
            list_memory_files(self.workspace, self.settings.extra_paths)
            or "sessions" in self.settings.sources
        ):
            self._safe_sync("search")

    def _sync_before_search(self, session_key: str | None) -> None:
        """Warm up on a new session, bootstrap an empty index, and with ``sync.on_search``
        sync a dirty one in the background (the search serves the current index)."""
        warm = self.settings.sync.on_session_start
        if warm and session_key and session_key not in self._warm_sessions:
            self._warm_sessions.add(session_key)
            self._background_sync("session-start")
        self._bootstrap_if_empty()
        if self.dirty and self.settings.sync.on_search:
            self._background_sync("search")

    def _search(self, request: SearchRequest) -> list[Candidate]:
        return self._search_many([request])[0]

    def _search_many(self, requests: Sequence[SearchRequest]) -> list[list[Candidate]]:
        """One embedding batch for all queries and one matrix product over the vectors;
        each answer equals the single search's. A failing index is recovered once."""
        try:
            return self._run_searches(requests)
        except Exception as exc:
            with self.files.lock:
                self.files.query_failed(exc)
            self.sync(reason="recover")
            return self._run_searches(requests)

    def _query_vectors(self, texts: list[str]) -> tuple[Matrix | None, str | None]:
        """The queries' vectors when the index's vectors match the provider, else ``None``
        with the reason the search is keyword-only (``None`` in keyword-only mode)."""
        if self.runtime.provider is None:
            return None, None
        with self.files.lock:
            store = self.files.reader_store()
            meta = self.files.reader_meta
        expected = self._expected_meta()
        usable = meta is not None and all(
            meta.get(k) == expected[k] for k in ("provider_key", "model")
        )
        if store is not None and not usable:
            self._background_sync("reindex")
            return None, REINDEX_PENDING
        if not usable:
            return None, None
        try:
            matrix = self.query_vectors.embed_many(texts)
        except ProviderError as exc:
            self.last_search_error = f"query embedding failed: {exc}"
            log.warning("memwell: %s; searching by keyword", self.last_search_error)
            return None, self.last_search_error
        self.last_search_error = None
        return matrix, None

    def _hybrid_many(
        self, store: IndexStore, requests: Sequence[SearchRequest], matrix: Matrix
    ) -> list[list[Candidate]]:
        meta = self.files.reader_meta or {}
        model = meta.get("model", FTS_ONLY_MODEL)
        calibration = Calibration.from_json(meta.get("calibration_params"))
        nonzero = [bool(row.any()) for row in matrix]
        hits = self.vectors.search_many(
            store,
            model,
            matrix[np.asarray(nonzero, dtype=bool)],
            self.searcher.vector_limit(requests[0]),
            self.generation,
        )
        per_query = iter(hits)
        return [
            self.searcher.hybrid(
                store,
                request,
                next(per_query) if has_vector else None,
                calibration=calibration,
                query_vector=row if has_vector else None,
                model=model,
            )
            for request, row, has_vector in zip(requests, matrix, nonzero, strict=True)
        ]

    def _run_searches(self, requests: Sequence[SearchRequest]) -> list[list[Candidate]]:
        matrix, reason = self._query_vectors([request.query for request in requests])
        found: list[list[Candidate]] = [[] for _ in requests]
        mode: SearchMode = "fts-only"
        with self.files.lock:
            store = self.files.reader_store()
            if store is not None and matrix is not None:
                with store.one_snapshot():
                    found = self._hybrid_many(store, requests, matrix)
                mode = "hybrid" if store.fts_available else "vector-only"
            elif store is not None and store.fts_available:
                with store.one_snapshot():
                    found = [self.searcher.keyword_only(store, r) for r in requests]
            if store is not None and store.fts_error and store.fts_error.startswith(FTS_DAMAGED):
                self._background_sync("fts-repair", force=True)  # a new generation, fresh FTS
            if store is None or not store.fts_available:
                reason = _no_keyword_index(store, self.last_sync_error)
                if mode != "vector-only":
                    mode = "file-scan"
                    found, incomplete = self._file_scan(requests)
                    if incomplete:
                        reason += f"; scan incomplete: {', '.join(incomplete)}"
        self.last_degradation = (
            None if reason is None else SearchDegradation(mode=mode, reason=reason)
        )
        return found

    def _file_scan(
        self, requests: Sequence[SearchRequest]
    ) -> tuple[list[list[Candidate]], list[str]]:
        found: list[list[Candidate]] = []
        incomplete: dict[str, None] = {}
        for request in requests:
            cands, outcome = self.searcher.file_scan(request)
            found.append(cands)
            incomplete.update(dict.fromkeys(outcome.incomplete))
        return found, list(incomplete)

    # -- recall cache and warm-up -----------------------------------------------------------

    def content_version(self) -> str:
        """Changes whenever a commit changed the published index, from any process.

        The published generation file, how often this manager has opened it, and SQLite's
        ``data_version`` of the reader connection (it moves when another connection commits).
        """
        with self.files.lock:
            store = self.files.reader_store()
            if store is None:
                return "empty"
            if store is not self._versioned_store:
                self._versioned_store = store
                self._reader_opens += 1
            return f"{store.path.name}:{self._reader_opens}:{store.data_version()}"

    def query_embedder(self) -> QueryVectors | None:
        """The query vectors this manager's searches use (``None`` in keyword-only mode)."""
        return self.query_vectors if self.runtime.provider is not None else None

    def warm(self) -> None:
        """Open the index, load the vector matrix and the embedding model now."""
        self._bootstrap_if_empty()
        with self.files.lock:
            store = self.files.reader_store()
            model = (self.files.reader_meta or {}).get("model", FTS_ONLY_MODEL)
            if store is not None and self.runtime.provider is not None:
                self.vectors.preload(store, model, self.generation)
        if self.runtime.provider is not None:
            self.query_vectors.warm()

    # -- reads, status, probes --------------------------------------------------------------

    def _index_status(self) -> dict[str, Any]:
        fields = self.provider_fields()
        has_vectors = fields["search_mode"] not in ("fts-only", "disabled")
        with self.files.lock:
            store = self.files.reader_store()
            try:
                counts = store.source_counts() if store is not None else []
                # Counting vectors reads every chunk row (past its text): keyword-only skips it.
                vector_count = store.vector_count() if store is not None and has_vectors else 0
                cache_entries = store.cache_count() if store is not None else 0
            except Exception as exc:
                self.files.query_failed(exc)
                store, counts, vector_count, cache_entries = None, [], 0, 0
            meta = self.files.reader_meta or {}
            info = store.info if store is not None else None
            fts = FtsStatus(
                enabled=self.settings.query.hybrid.enabled,
                available=store.fts_available if store is not None else True,
                tokenizer=self.settings.store.fts.tokenizer,
                error=store.fts_error if store is not None else None,
            )
            engine = self.vectors.active_engine(store) if store is not None else None
            db_path = str(store.path) if store is not None else None
            notes = self.files.notes(store)
        if has_vectors and meta:
            expected = self._expected_meta()
            if meta.get("provider_key") != expected["provider_key"]:
                fields["search_mode"] = "fts-only"
                fields["provider_unavailable_reason"] = REINDEX_PENDING
        if not fts.available and fields["search_mode"] != "disabled":
            fields["search_mode"] = "vector-only" if has_vectors else "file-scan"
        degraded = self.last_degradation or _standing_degradation(
            fields, fts, self.settings.provider
        )
        files = sum(f for _, f, _ in counts)
        chunks = sum(c for _, _, c in counts)
        purpose_dirty = meta == {} if self.purpose == "status" else self.dirty
        vec_enabled = self.settings.store.vector.enabled
        return dict(
            files=files,
            chunks=chunks,
            vectors=vector_count if has_vectors else None,
            dirty=purpose_dirty,
            db_path=db_path,
            source_counts=[SourceCount(source=s, files=f, chunks=c) for s, f, c in counts],
            cache=CacheStatus(
                enabled=self.settings.cache.enabled,
                entries=cache_entries,
                max_entries=self.settings.cache.max_entries,
            ),
            fts=fts,
            vector=VectorStatus(
                enabled=vec_enabled,
                available=vec_enabled and has_vectors,
                engine=engine,
                extension_path=info.vec_path if info else None,
                load_error=info.vec_error if info else None,
                dims=meta.get("vector_dims"),
            ),
            degraded=degraded,
            last_sync_error=self.last_sync_error or self.last_search_error,
            unreadable=list(
                self.unreadable if self.unreadable is not None else meta.get("unreadable", [])
            ),
            custom={
                "sqlite": {
                    "module": info.module if info else None,
                    "version": info.sqlite_version if info else None,
                    "sqlite_vec": info.vec_version if info else None,
                },
                "batch": msgspec.structs.asdict(self.runtime.batch),
                "recovered": list(self.files.recovered),
                "generation_file": Path(db_path).name if db_path else None,
                "access": store.access if store is not None else None,
                "index_notes": notes,
            },
            **fields,
        )

    def probe_vector(self) -> ProbeResult:
        if not self.settings.store.vector.enabled:
            return ProbeResult(ok=False, error="store.vector.enabled is false")
        return super().probe_vector()

    def _probe_vector_store(self) -> ProbeResult:
        with self.files.lock:
            store = self.files.reader_store()
            if store is not None and not store.info.vec_loaded and self.vectors.engine != "numpy":
                return ProbeResult(ok=True, error=f"sqlite-vec: {store.info.vec_error}; numpy")
        return ProbeResult(ok=True)

    def _close(self) -> None:
        self._stop.set()
        if self._watcher is not None:
            self._watcher.stop()
        if self.session_deltas is not None:
            self.session_deltas.close()
        background = self._background
        if background is not None:
            background.join(timeout=30)
        self.wait_for_sync()
        with self.files.lock:
            self.files.close_reader()


def _no_keyword_index(store: IndexStore | None, sync_error: str | None) -> str:
    """Why keyword search cannot use the index (for file-scan and vector-only modes)."""
    if store is not None:
        return f"FTS5 keyword index unavailable ({store.fts_error})"
    suffix = f" (last sync error: {sync_error})" if sync_error else ""
    return f"no index to search{suffix}"


def _standing_degradation(
    fields: dict[str, Any], fts: FtsStatus, requested: str
) -> SearchDegradation | None:
    """How searches are degraded by the current state (before, or apart from, any search)."""
    mode = fields.get("search_mode", "hybrid")
    if not fts.available:
        return SearchDegradation(
            mode=mode, reason=f"FTS5 keyword index unavailable ({fts.error or 'no index'})"
        )
    if mode == "fts-only" and requested != "none":
        reason = fields.get("provider_unavailable_reason") or "no embedding provider"
        return SearchDegradation(mode=mode, reason=str(reason))
    return None
