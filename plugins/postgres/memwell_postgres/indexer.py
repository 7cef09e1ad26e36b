"""Syncing Markdown into Postgres: many writers, short transactions, generation switches.

Every sync embeds first, outside any transaction (the shared cache is consulted and filled
before a single row is written), then applies each changed file in one short transaction
under that file's advisory lock, re-checking its hash there. A full rebuild (first index,
``force``, or a changed identity) loads a new generation and switches to it in one
transaction, so readers see the old index or the new one, never a mix.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memwell.plugin import (
    CHARS_PER_TOKEN,
    CHUNKER_VERSION,
    Chunk,
    EmbeddingRuntime,
    MemwellSettings,
    ProgressCallback,
    SyncProgress,
    Vector,
    chunk_markdown,
    enforce_input_limit,
    list_memory_files,
    read_source_file,
    stat_source_file,
)

from .config import PostgresConfig, writer_of
from .db import Conn, Database
from .lexemes import LEXEME_VERSION
from .schema import SCHEMA_VERSION, ensure_generation_indexes
from .store import CacheKey, ChunkRow, FileRow, Loaded, Store, lock_key

log = logging.getLogger(__name__)

BATCH_FILES = 128
"""Files prepared (read, chunked, embedded) before their rows are written."""


@dataclass(frozen=True)
class PreparedFile:
    """A changed file read from disk and chunked; ``chunks`` get vectors before writing."""

    row: FileRow
    chunks: list[Chunk]


@dataclass
class SyncReport:
    """What one sync did (kept for status)."""

    rebuilt: bool = False
    written: int = 0
    deleted: int = 0
    skipped_newer: int = 0
    kept_foreign: int = 0
    embedded: int = 0
    cached: int = 0
    notes: list[str] = field(default_factory=list)


class Indexer:
    """Brings one namespace up to date with one workspace's Markdown files."""

    def __init__(
        self,
        db: Database,
        store: Store,
        workspace: Path,
        settings: MemwellSettings,
        runtime: EmbeddingRuntime,
        config: PostgresConfig,
    ) -> None:
        self.db = db
        self.store = store
        self.workspace = workspace
        self.settings = settings
        self.runtime = runtime
        self.config = config
        self.host = config.host(workspace)
        self.writer = writer_of(workspace)
        self.dims: int | None = None

    # -- identity and chunking --------------------------------------------------------------

    def chunk_tokens(self) -> int:
        tokens = self.settings.chunking.tokens
        if self.runtime.provider is not None:
            tokens = max(1, min(tokens, self.runtime.input_limit_bytes() // CHARS_PER_TOKEN))
        return tokens

    def identity(self) -> dict[str, Any]:
        """What the index depends on; a host with a different identity rebuilds it."""
        tokens = self.chunk_tokens()
        return {
            "schema": SCHEMA_VERSION,
            "lexemes": LEXEME_VERSION,
            "provider_key": self.runtime.provider_key(),
            "model": self.model(),
            "chunking": [tokens, min(self.settings.chunking.overlap, tokens - 1), CHUNKER_VERSION],
        }

    def model(self) -> str:
        provider = self.runtime.provider
        return "fts-only" if provider is None else f"{provider.id}:{provider.model}"

    def _chunks(self, text: str) -> list[Chunk]:
        tokens = self.chunk_tokens()
        overlap = min(self.settings.chunking.overlap, tokens - 1)
        chunks = chunk_markdown(text, tokens=tokens, overlap=overlap)
        if self.runtime.provider is not None:
            chunks = enforce_input_limit(chunks, self.runtime.input_limit_bytes())
        return chunks

    # -- sync -------------------------------------------------------------------------------

    def ensure_postings(self) -> str | None:
        """Give the active generation its keyword postings if it was indexed before they
        existed (built on the server from the chunks' ``tsvector`` values, with no file
        read or embedded); says what it did, or None when there was nothing to do."""
        key = lock_key(self.store.schema, self.store.namespace, "rebuild")
        with self.db.connection() as conn:
            if self.store.postings_ready(conn):
                return None
            conn.execute("SELECT pg_advisory_lock(%s)", (key,))
            try:
                if self.store.postings_ready(conn):
                    return None
                with conn.transaction():
                    generation = self.store.lock_active(conn)
                    if generation is None:
                        return None
                    written = self.store.postings.from_tsvectors(conn, generation)
                    self.store.mark_postings_ready(conn, generation)
                self._ensure_indexes(conn, generation, SyncReport())
                self.store.postings.analyze(conn)
            finally:
                conn.execute("SELECT pg_advisory_unlock(%s)", (key,))
        message = (
            f"keyword postings built on open for generation {generation} "
            f"({written} postings from the stored chunks)"
        )
        log.warning("memwell: postgres namespace %r: %s", self.store.namespace, message)
        return message

    def sync(self, *, force: bool, progress: ProgressCallback | None) -> SyncReport:
        report = SyncReport()
        identity = self.identity()
        with self.db.connection() as conn:
            active = self.store.active(conn)
        if force or active is None or active.identity != identity:
            rebuilt_by_other = self._rebuild(identity, force, progress, report)
            if not rebuilt_by_other:
                return report
            with self.db.connection() as conn:
                active = self.store.active(conn)
            assert active is not None
        self._incremental(active.generation, progress, report)
        return report

    def _rebuild(
        self,
        identity: dict[str, Any],
        force: bool,
        progress: ProgressCallback | None,
        report: SyncReport,
    ) -> bool:
        """Build and switch to a new generation; False if another writer already built one.

        The namespace's rebuild lock is held for the whole build, so concurrent rebuilds of
        one namespace queue up; a writer that waited finds the index already matching and
        syncs incrementally instead (unless ``force``).
        """
        key = lock_key(self.store.schema, self.store.namespace, "rebuild")
        with self.db.connection() as lock_conn:
            lock_conn.execute("SELECT pg_advisory_lock(%s)", (key,))
            try:
                active = self.store.active(lock_conn)
                if not force and active is not None and active.identity == identity:
                    return True
                generation = self.store.begin_generation(lock_conn, identity, self.host)
                paths = list_memory_files(self.workspace, self.settings.extra_paths)
                loaded = Loaded()
                done = 0
                for batch in _batches(paths, BATCH_FILES):
                    prepared = [p for p in map(self._read, batch) if p is not None]
                    vectors = self._embed(prepared, report)
                    files = [(item.row.path, self._rows(item, vectors)) for item in prepared]
                    with self.db.connection() as conn, conn.transaction():
                        # Readers never see a building generation and a crash discards it,
                        # so its batches need not wait for the disk; the switch does.
                        conn.execute("SET LOCAL synchronous_commit = off")
                        batch_loaded = self.store.insert_chunks(
                            conn, generation, files, self.model()
                        )
                        self.store.copy_files(conn, generation, [item.row for item in prepared])
                    loaded.merge(batch_loaded)
                    report.written += len(prepared)
                    done += len(batch)
                    _report(progress, done, len(paths), batch[-1].name)
                with lock_conn.transaction():
                    self.store.add_counts(lock_conn, generation, loaded.chunks, loaded.tokens)
                    self.store.copy_term_stats(lock_conn, generation, loaded.df)
                log.info(
                    "loaded %d chunks into generation %s; building its indexes",
                    loaded.chunks,
                    generation,
                )
                self._ensure_indexes(lock_conn, generation, report)
                self.store.postings.analyze(lock_conn)
                self.store.switch_to(lock_conn, generation, identity)
                self.store.drop_generations(lock_conn, "retired")
                report.rebuilt = True
            finally:
                lock_conn.execute("SELECT pg_advisory_unlock(%s)", (key,))
        return False

    def _incremental(
        self, generation: int, progress: ProgressCallback | None, report: SyncReport
    ) -> None:
        with self.db.connection() as conn:
            known = self.store.files(conn, generation)
        paths = list_memory_files(self.workspace, self.settings.extra_paths)
        seen: set[str] = set()
        done = 0
        for batch in _batches(paths, BATCH_FILES):
            changed: list[PreparedFile] = []
            for abs_path in batch:
                item = self._changed(abs_path, known, seen)
                if item is not None:
                    changed.append(item)
            vectors = self._embed(changed, report)
            for item in changed:
                self._apply(generation, item, vectors, report)
            done += len(batch)
            _report(progress, done, len(paths), batch[-1].name)
        for path, row in known.items():
            if path not in seen:
                self._delete_missing(generation, row, report)
        if report.written:
            with self.db.connection() as conn:
                self._ensure_indexes(conn, generation, report)

    def _ensure_indexes(self, conn: Conn, generation: int, report: SyncReport) -> None:
        """The generation's full-text and (once its dimension is known) vector indexes."""
        vector = None if self.dims is None else (self.model(), self.dims)
        build = ensure_generation_indexes(
            conn, self.store.schema, self.store.namespace, generation, vector, self.config
        )
        if build.built:
            log.info("built %s for generation %s", ", ".join(build.built), generation)
        for warning in build.warnings:
            log.warning("index build of generation %s: %s", generation, warning)
            report.notes.append(f"index build: {warning}")

    def _changed(
        self, abs_path: Path, known: dict[str, FileRow], seen: set[str]
    ) -> PreparedFile | None:
        stat = stat_source_file(abs_path, self.workspace)
        if stat is None:
            return None
        rel, mtime_ns, size = stat
        seen.add(rel)
        old = known.get(rel)
        if (
            old is not None
            and old.writer == self.writer
            and (old.mtime_ns, old.size) == (mtime_ns, size)
        ):
            return None
        item = self._read(abs_path)
        if item is None or (old is not None and old.hash == item.row.hash):
            return None
        return item

    def _read(self, abs_path: Path) -> PreparedFile | None:
        read = read_source_file(abs_path, self.workspace)
        if read is None:
            return None
        entry, text = read
        row = FileRow(entry.path, entry.hash, entry.mtime_ns, entry.size, self.host, self.writer)
        return PreparedFile(row, self._chunks(text))

    def _apply(
        self, generation: int, item: PreparedFile, vectors: dict[str, Vector], report: SyncReport
    ) -> None:
        """Write one file in one transaction under its lock, unless the index has it already
        or holds a newer copy from another checkout (whatever the host ids say)."""
        path = item.row.path
        with self.db.connection() as conn, conn.transaction():
            if not self.store.lock_file(conn, generation, path):
                report.notes.append(f"{path}: generation switched during sync; next sync")
                return
            current = self.store.file_row(conn, generation, path)
            if current is not None and current.hash == item.row.hash:
                return
            if (
                current is not None
                and current.writer != self.writer
                and current.mtime_ns > item.row.mtime_ns
            ):
                report.skipped_newer += 1
                return
            rows = self._rows(item, vectors)
            self.store.replace_chunks(conn, generation, path, rows, self.model())
            self.store.upsert_file(conn, generation, item.row)
        report.written += 1

    def _delete_missing(self, generation: int, row: FileRow, report: SyncReport) -> None:
        """Drop a file gone from disk, if this host indexed it (or ``delete_missing="any"``)."""
        if self.config.delete_missing == "own" and row.host != self.host:
            report.kept_foreign += 1
            return
        with self.db.connection() as conn, conn.transaction():
            if not self.store.lock_file(conn, generation, row.path):
                return
            current = self.store.file_row(conn, generation, row.path)
            if (
                current is None
                or current.hash != row.hash
                or (self.config.delete_missing == "own" and current.host != self.host)
            ):
                return
            self.store.delete_file(conn, generation, row.path)
        report.deleted += 1

    # -- embeddings -------------------------------------------------------------------------

    def cache_key(self) -> CacheKey | None:
        provider = self.runtime.provider
        if provider is None:
            return None
        return CacheKey(provider.id, provider.model, self.runtime.provider_key())

    def _embed(self, items: Sequence[PreparedFile], report: SyncReport) -> dict[str, Vector]:
        """Vectors for every chunk of ``items``: from the shared cache, else embedded now and
        added to the cache before anything else is written."""
        key = self.cache_key()
        if key is None:
            return {}
        texts = {c.hash: c.text for item in items for c in item.chunks}
        if not texts:
            return {}
        with self.db.connection() as conn:
            vectors = self.store.cached_vectors(conn, key, list(texts))
        missing = [h for h in texts if h not in vectors]
        report.cached += len(vectors)
        if missing:
            matrix = self.runtime.embed_documents([texts[h] for h in missing])
            fresh = {h: matrix[i] for i, h in enumerate(missing)}
            with self.db.connection() as conn:
                self.store.cache_vectors(conn, key, fresh)
            vectors.update(fresh)
            report.embedded += len(missing)
        if vectors:
            self.dims = len(next(iter(vectors.values())))
        return vectors

    def _rows(self, item: PreparedFile, vectors: dict[str, Vector]) -> list[ChunkRow]:
        return [
            ChunkRow(c.start_line, c.end_line, c.hash, c.text, vectors.get(c.hash))
            for c in item.chunks
        ]


def _batches(paths: Sequence[Path], size: int) -> Iterator[Sequence[Path]]:
    for start in range(0, len(paths), size):
        yield paths[start : start + size]


def _report(progress: ProgressCallback | None, done: int, total: int, label: str) -> None:
    if progress is not None:
        progress(SyncProgress(completed=done, total=total, label=label))
