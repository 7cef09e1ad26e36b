"""``SqliteMemoryManager``: the builtin backend's :class:`~memwell.MemorySearchManager`."""

from __future__ import annotations

import logging
import re
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from memwell.config import MemwellSettings
from memwell.descriptors import BackendContext
from memwell.embedding_runtime import EmbeddingRuntime
from memwell.embeddings import EmbeddingProvider
from memwell.errors import BackendUnavailableError, ProviderError
from memwell.manager import BaseMemoryManager, ProgressCallback
from memwell.models import (
    CacheStatus,
    FtsStatus,
    MemorySearchResult,
    MemoryStatus,
    ProbeResult,
    ReadFileResult,
    SourceCount,
    VectorStatus,
)
from memwell.retrieval.candidate import Candidate
from memwell.retrieval.chunking import CHUNKER_VERSION
from memwell.retrieval.snippets import format_citation, truncate_snippet
from memwell.sources.discovery import list_memory_files, normalize_extra_paths
from memwell.sources.paths import read_memory_file
from memwell.sources.sessions import readable_sessions_dir

from .config import BuiltinConfig
from .indexer import FTS_ONLY_MODEL, Indexer, scope_hash, sessions_dir
from .integrity import file_problem
from .layout import IndexDir
from .search import Searcher
from .store import SCHEMA_VERSION, IndexStore
from .vectors import VectorIndex
from .watcher import MemoryWatcher

log = logging.getLogger(__name__)

#: sqlite-vec reports a damaged page under its vectors as "opening blob failed".
_CORRUPT = re.compile(
    r"malformed|not a database|corrupt|disk image|file is encrypted|opening blob failed", re.I
)
#: Errors that are not the index file's fault (it must not be quarantined for them).
_TRANSIENT = re.compile(
    r"locked|busy|unable to open|out of memory|interrupt|too many open|read-?only|permission"
    r"|disk is full|disk I/O",
    re.I,
)
_EMBEDDING_ERROR = re.compile(r"embedding|embeddings|batch|provider", re.I)


class SqliteMemoryManager(BaseMemoryManager):
    """Markdown memory indexed in SQLite (FTS5 + vectors) with incremental, crash-safe sync.

    One writer at a time per workspace (a file lock, across processes); any number of
    readers. A full reindex builds a new index file and switches to it atomically, so the old
    index keeps serving until the new one is complete.
    """

    def __init__(self, ctx: BackendContext, config: BuiltinConfig | None = None) -> None:
        self.config = config or BuiltinConfig()
        self.workspace = ctx.workspace
        self.settings: MemwellSettings = ctx.settings
        self.runtime: EmbeddingRuntime = ctx.embeddings
        self.purpose = ctx.purpose
        root = self.settings.store.path
        self.index_dir = IndexDir(
            Path(root).expanduser() if root else self.workspace / self.settings.index_dir
        )
        engine = "numpy" if self.config.vector_engine == "auto" else self.config.vector_engine
        self.vectors = VectorIndex(engine)
        self.searcher = Searcher(self.settings, self.workspace, self.vectors)
        self._reader: IndexStore | None = None
        self._reader_meta: dict[str, Any] | None = None
        self._meta_cache: tuple[EmbeddingProvider | None, dict[str, Any]] | None = None
        self._read_lock = threading.RLock()
        self._sync_lock = threading.Lock()
        self._state_lock = threading.Lock()
        self._background: threading.Thread | None = None
        self._warm_sessions: set[str] = set()
        self._stop = threading.Event()
        self.generation = 0
        self.dirty = True
        self.closed = False
        self.last_sync_error: str | None = None
        self.last_search_error: str | None = None
        self.recovered: list[str] = []
        self.unreadable: list[str] | None = None
        """What this process's last sync could not read (``None``: no sync here yet)."""
        self._kept_model_index_said = False
        self._watcher: MemoryWatcher | None = None
        self._interval: threading.Thread | None = None
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
            self._watcher = MemoryWatcher(
                self.workspace,
                self._watch_roots(),
                on_dirty=self._mark_dirty,
                on_change=lambda: self.sync(reason="watch"),
                debounce_s=sync_cfg.watch_debounce_ms / 1000,
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

    def _background_sync(self, reason: str) -> None:
        with self._state_lock:
            if self._background is not None and self._background.is_alive():
                return
            self._background = threading.Thread(
                target=self._safe_sync, args=(reason,), name="memwell-sync", daemon=True
            )
            self._background.start()

    # -- index files ------------------------------------------------------------------------

    def _open_store(self, path: Path) -> IndexStore:
        vector = self.settings.store.vector
        return IndexStore(
            path,
            tokenizer=self.settings.store.fts.tokenizer,
            vector_enabled=vector.enabled,
            extension_path=vector.extension_path,
        )

    def _quarantine(self, path: Path, problem: str) -> None:
        target = path.with_name(f"{path.name}.corrupt-{int(time.time())}")
        log.warning("memwell: index %s is damaged (%s); rebuilding from Markdown", path, problem)
        self.recovered.append(f"{path.name}: {problem}")
        try:
            path.rename(target)
        except OSError:
            self.index_dir.discard(path)

    def _drop_damaged_reader(self, problem: str) -> None:
        """Quarantine the reader's file after a query found it damaged (hold ``_read_lock``)."""
        if self._reader is not None:
            self._quarantine(self._reader.path, problem)
            self._reader.close()
            self._reader = None
            self._reader_meta = None
            self.vectors.invalidate()
        self.dirty = True

    def _reader_store(self) -> IndexStore | None:
        """The store of the published generation (reopened when it changes).

        A writer may publish a new generation and delete the old one at any moment, so an
        open is retried when the pointer moved while the file was being opened; only a file
        that is still the published one can be taken for damaged.
        """
        for _ in range(5):
            current = self.index_dir.current()
            if self._reader is not None and current == self._reader.path:
                return self._reader
            if self._reader is not None:
                self._reader.close()
                self._reader = None
                self._reader_meta = None
                self.vectors.invalidate()
            if current is None:
                return None
            problem = file_problem(current)
            store = None
            error: Exception | None = None
            if problem is None:
                try:
                    store = self._open_store(current)
                    self._reader_meta = store.read_meta()
                except Exception as exc:
                    if store is not None:
                        store.close()
                    store, error = None, exc
                    problem = f"{type(exc).__name__}: {exc}"
            if self.index_dir.current() != current:  # switched while opening: try again
                if store is not None:
                    store.close()
                self._reader_meta = None
                continue
            if error is not None and _TRANSIENT.search(str(error)):
                raise error  # not the file's fault: never quarantine a healthy index
            if store is None:
                self._quarantine(current, problem or "unreadable")
                return None
            self._reader = store
            return store
        return None

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
        }

    def _needs_full(self, meta: dict[str, Any] | None, store: IndexStore) -> str | None:
        """Why the index must be rebuilt from scratch, or ``None``."""
        if meta is None:
            return "no index metadata"
        for key, value in self._expected_meta().items():
            if meta.get(key) != value:
                return f"{key} changed"
        if meta.get("vec_mirror") != store.info.vec_loaded and self.runtime.provider is not None:
            return "sqlite-vec availability changed"
        return None

    # -- sync -------------------------------------------------------------------------------

    def sync(
        self,
        *,
        reason: str = "manual",
        force: bool = False,
        progress: ProgressCallback | None = None,
    ) -> None:
        """Bring the index up to date; concurrent calls join the running sync."""
        if self.closed:
            raise BackendUnavailableError("memory manager is closed")
        if not self._sync_lock.acquire(blocking=False):
            with self._sync_lock:  # join: wait for the running sync, then return
                if not force:
                    return
                self._sync_locked(reason, force, progress)
                return
        try:
            self._sync_locked(reason, force, progress)
        finally:
            self._sync_lock.release()

    def _sync_locked(self, reason: str, force: bool, progress: ProgressCallback | None) -> None:
        try:
            self._sync_once(force, progress)
        except Exception as exc:
            if (
                isinstance(exc, ProviderError) or _EMBEDDING_ERROR.search(str(exc))
            ) and self.runtime.activate_fallback(str(exc)):
                log.warning("memwell: embedding provider failed (%s); using fallback", exc)
                self._sync_once(True, progress)
            else:
                self.last_sync_error = f"{type(exc).__name__}: {exc}"
                raise
        self.last_sync_error = None

    def _sync_once(self, force: bool, progress: ProgressCallback | None) -> None:
        self.dirty = False
        with self.index_dir.write_lock():
            self.index_dir.cleanup()  # generations left by a writer that crashed
            current = self.index_dir.current()
            reason = "forced" if force else None
            store = None
            meta: dict[str, Any] = {}
            if current is not None and file_problem(current) is None:
                try:
                    store = self._open_store(current)
                    stored = store.read_meta()
                    meta = stored or {}
                    if not force and self._keeps_model_index(meta):
                        store.close()
                        return
                    reason = reason or self._needs_full(stored, store)
                except Exception as exc:
                    if store is not None:
                        store.close()
                    store = None
                    if _TRANSIENT.search(str(exc)):
                        raise  # not the file's fault: never quarantine a healthy index
                    self._quarantine(current, f"{type(exc).__name__}: {exc}")
                    current = None
            elif current is not None:
                self._quarantine(current, file_problem(current) or "unreadable")
                current = None
            try:
                if store is None or reason is not None:
                    if store is not None:
                        store.close()
                        store = None
                    self._full_reindex(current, progress)
                else:
                    try:
                        indexer = Indexer(store, self.settings, self.runtime, self.workspace)
                        self.unreadable = indexer.run(full=False, progress=progress).errors
                        if self.unreadable != meta.get("unreadable", []):  # for `status`
                            store.write_meta({**meta, "unreadable": self.unreadable})
                    except Exception as exc:
                        if not _CORRUPT.search(str(exc)):
                            raise
                        store.close()
                        self._quarantine(store.path, str(exc))
                        store = None
                        self._full_reindex(None, progress)
            finally:
                if store is not None:
                    store.close()
            self.generation += 1
        self.vectors.invalidate()

    def _keeps_model_index(self, meta: dict[str, Any] | None) -> bool:
        """Keyword-only mode over an index built with a model: use it as it is.

        Rebuilding it without vectors would throw them away and make the next search with
        the model re-embed everything; updating it would leave changed files without
        vectors. So it is neither, and that is said once.
        """
        model = (meta or {}).get("model")
        if self.runtime.provider is not None or model in (None, FTS_ONLY_MODEL):
            return False
        if not self._kept_model_index_said:
            self._kept_model_index_said = True
            log.warning(
                "memwell: keyword-only search over the index built with %s, used as it is "
                "(not updated without the model: a search with it picks up changed files)",
                model,
            )
        return True

    def _full_reindex(self, old: Path | None, progress: ProgressCallback | None) -> None:
        """Build a new generation next to the old one and switch to it atomically."""
        new_path = self.index_dir.new_generation()
        store = self._open_store(new_path)
        try:
            if old is not None and self.settings.cache.enabled:
                try:
                    store.copy_cache_from(old)
                except Exception as exc:
                    if not _CORRUPT.search(str(exc)):
                        raise
                    log.warning("memwell: not reusing the damaged embedding cache: %s", exc)
            indexer = Indexer(store, self.settings, self.runtime, self.workspace)
            self.unreadable = indexer.run(full=True, progress=progress).errors
            dims = self.runtime.dims if self.runtime.provider is not None else None
            store.write_meta(
                {
                    **self._expected_meta(),
                    "vector_dims": dims,
                    "vec_mirror": store.info.vec_loaded,
                    "unreadable": self.unreadable,
                }
            )
            if self.settings.cache.max_entries:
                store.cache_prune(self.settings.cache.max_entries)
            store.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        except BaseException:
            store.close()
            self.index_dir.discard(new_path)
            raise
        store.close()
        self.index_dir.publish(new_path)
        with self._read_lock:
            if self._reader is not None and self._reader.path != new_path:
                self._reader.close()
                self._reader = None
                self._reader_meta = None
        self.index_dir.cleanup()

    # -- search -----------------------------------------------------------------------------

    def _bootstrap_if_empty(self) -> None:
        with self._read_lock:
            store = self._reader_store()
            try:
                empty = store is None or not store.has_chunks()
            except Exception as exc:
                if not _CORRUPT.search(str(exc)):
                    raise
                self._drop_damaged_reader(str(exc))
                empty = True
        if empty and (
            list_memory_files(self.workspace, self.settings.extra_paths)
            or "sessions" in self.settings.sources
        ):
            self._safe_sync("search")

    def search(
        self,
        query: str,
        *,
        max_results: int | None = None,
        min_score: float | None = None,
        session_key: str | None = None,
        sources: Sequence[str] | None = None,
    ) -> list[MemorySearchResult]:
        if self.closed:
            raise BackendUnavailableError("memory manager is closed")
        text = query.strip() if isinstance(query, str) else ""
        if not text:
            return []
        wanted: list[str] = [
            s for s in (sources or self.settings.sources) if s in self.settings.sources
        ]
        if not wanted:
            return []
        limit = max(1, max_results or self.settings.query.max_results)
        floor = self.settings.query.min_score if min_score is None else min_score
        warm = self.settings.sync.on_session_start
        if warm and session_key and session_key not in self._warm_sessions:
            self._warm_sessions.add(session_key)
            self._background_sync("session-start")
        self._bootstrap_if_empty()
        if self.dirty and self.settings.sync.on_search:
            self._background_sync("search")
        provider = self.runtime.provider
        try:
            return self._search(text, limit, floor, wanted, provider is not None)
        except Exception as exc:
            if not _CORRUPT.search(str(exc)):
                raise
            with self._read_lock:
                self._drop_damaged_reader(str(exc))
            self.sync(reason="recover", force=True)
            return self._search(text, limit, floor, wanted, provider is not None)

    def _search(
        self, text: str, limit: int, floor: float, sources: list[str], has_provider: bool
    ) -> list[MemorySearchResult]:
        query_vector = None
        vectors_usable = False
        if has_provider:
            with self._read_lock:
                store = self._reader_store()
                meta = self._reader_meta
            expected = self._expected_meta()
            vectors_usable = meta is not None and all(
                meta.get(k) == expected[k] for k in ("provider_key", "model")
            )
            if store is not None and not vectors_usable:
                self._background_sync("reindex")
            if vectors_usable:
                try:
                    query_vector = self.runtime.embed_query(text)
                    self.last_search_error = None
                except ProviderError as exc:
                    self.last_search_error = f"query embedding failed: {exc}"
                    log.warning("memwell: %s", self.last_search_error)
        with self._read_lock:
            store = self._reader_store()
            if store is None:
                return []
            model = (self._reader_meta or {}).get("model", FTS_ONLY_MODEL)
            if not vectors_usable:
                found = self.searcher.keyword_only(
                    store, text, max_results=limit, min_score=floor, sources=sources
                )
            else:
                found = self.searcher.hybrid(
                    store,
                    model,
                    text,
                    query_vector,
                    max_results=limit,
                    min_score=floor,
                    sources=sources,
                    generation=self.generation,
                )
        return [_to_result(c) for c in found]

    # -- reads, status, probes --------------------------------------------------------------

    def read_file(
        self, rel_path: str, *, from_line: int | None = None, lines: int | None = None
    ) -> ReadFileResult:
        return read_memory_file(
            self.workspace,
            rel_path,
            from_line=from_line,
            lines=lines,
            extra_paths=self.settings.extra_paths,
            sessions_dir=readable_sessions_dir(
                self.workspace, self.settings.sessions_dir, self.settings.sources
            ),
        )

    def _provider_fields(self) -> dict[str, Any]:
        requested = self.settings.provider
        try:  # selection is cheap: providers load models lazily
            selection = self.runtime.selection()
        except Exception as exc:
            return {
                "provider": requested,
                "model": self.settings.model or None,
                "search_mode": "disabled",
                "provider_unavailable_reason": f"{type(exc).__name__}: {exc}",
            }
        if selection.provider is None:
            return {
                "provider": "none",
                "model": FTS_ONLY_MODEL,
                "search_mode": "fts-only",
                "provider_unavailable_reason": selection.unavailable_reason,
            }
        return {
            "provider": selection.provider.id,
            "model": selection.provider.model,
            "provider_fallback": selection.fallback,
        }

    def status(self) -> MemoryStatus:
        with self._read_lock:
            store = self._reader_store()
            try:
                counts = store.source_counts() if store is not None else []
                vector_count = store.vector_count() if store is not None else 0
                cache_entries = store.cache_count() if store is not None else 0
            except Exception as exc:
                if not _CORRUPT.search(str(exc)):
                    raise
                self._drop_damaged_reader(str(exc))
                store, counts, vector_count, cache_entries = None, [], 0, 0
            meta = self._reader_meta or {}
            info = store.info if store is not None else None
            fts = FtsStatus(
                enabled=self.settings.query.hybrid.enabled,
                available=store.fts_available if store is not None else True,
                tokenizer=self.settings.store.fts.tokenizer,
                error=store.fts_error if store is not None else None,
            )
            engine = self.vectors.active_engine(store) if store is not None else None
            db_path = str(store.path) if store is not None else None
        fields = self._provider_fields()
        has_vectors = fields.get("search_mode") not in ("fts-only", "disabled")
        if has_vectors and meta:
            expected = self._expected_meta()
            if meta.get("provider_key") != expected["provider_key"]:
                fields.setdefault("search_mode", "fts-only")
                fields["provider_unavailable_reason"] = (
                    "index was built with another embedding model; reindex pending"
                )
        files = sum(f for _, f, _ in counts)
        chunks = sum(c for _, _, c in counts)
        purpose_dirty = meta == {} if self.purpose == "status" else self.dirty
        vec_enabled = self.settings.store.vector.enabled
        return MemoryStatus(
            backend="builtin",
            requested_provider=self.settings.provider,
            files=files,
            chunks=chunks,
            vectors=vector_count if has_vectors else None,
            dirty=purpose_dirty,
            workspace_dir=str(self.workspace),
            db_path=db_path,
            extra_paths=list(self.settings.extra_paths),
            sources=list(self.settings.sources),
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
                "batch": vars(self.runtime.batch).copy(),
                "recovered": list(self.recovered),
                "generation_file": Path(db_path).name if db_path else None,
            },
            **fields,
        )

    def probe_embedding(self) -> ProbeResult:
        try:
            if self.runtime.provider is None:
                reason = self.runtime.selection().unavailable_reason
                return ProbeResult(
                    ok=False, error=reason or "No embedding provider available (FTS-only mode)"
                )
            self.runtime.embed_documents(["ping"])
            return ProbeResult(ok=True)
        except Exception as exc:
            return ProbeResult(ok=False, error=f"{type(exc).__name__}: {exc}")

    def probe_vector(self) -> ProbeResult:
        if not self.settings.store.vector.enabled:
            return ProbeResult(ok=False, error="store.vector.enabled is false")
        try:
            if self.runtime.provider is None:
                return ProbeResult(ok=False, error="no embedding provider (FTS-only mode)")
        except Exception as exc:
            return ProbeResult(ok=False, error=f"{type(exc).__name__}: {exc}")
        with self._read_lock:
            store = self._reader_store()
            if store is not None and not store.info.vec_loaded and self.vectors.engine != "numpy":
                return ProbeResult(ok=True, error=f"sqlite-vec: {store.info.vec_error}; numpy")
        return ProbeResult(ok=True)

    def close(self) -> None:
        if self.closed:
            return
        self.closed = True
        self._stop.set()
        if self._watcher is not None:
            self._watcher.stop()
        background = self._background
        if background is not None:
            background.join(timeout=30)
        with self._sync_lock, self._read_lock:
            if self._reader is not None:
                self._reader.close()
                self._reader = None


def _to_result(c: Candidate) -> MemorySearchResult:
    return MemorySearchResult(
        path=c.path,
        start_line=c.start_line,
        end_line=c.end_line,
        score=max(0.0, min(1.0, c.score)),
        snippet=truncate_snippet(c.text),
        source=c.source,
        citation=format_citation(c.path, c.start_line, c.end_line),
    )
