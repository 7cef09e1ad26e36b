"""Writing the Markdown index: the files and chunks tables kept in sync with the workspace by
content hash.

A sync re-reads only files whose mtime or size changed, re-chunks only files whose hash
changed, embeds only chunk texts not already in the table, and writes every change to the
chunks table in one atomic ``merge_insert`` commit. A change of provider, model, chunking or
scope rebuilds both tables, each in one ``overwrite`` commit, so readers see the old index or
the new one, never half of one.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from lancedb.index import FTS  # type: ignore[import-untyped,unused-ignore]
from memwell.plugin import (
    Chunk,
    ProgressCallback,
    SyncProgress,
    Vector,
    chunk_ids,
    chunk_markdown,
    enforce_input_limit,
    parse_session_jsonl,
    read_source_file,
    remap_lines,
    segment_for_index,
    session_entry_hash,
    stat_source_file,
)

from .db import Table, arrow_rows, in_filters
from .index_tables import FILES_SCHEMA, FTS_COLUMN, IndexTables, SyncStats, chunks_schema

log = logging.getLogger(__name__)

#: Files embedded per progress step during a sync.
FILES_PER_STEP = 64


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


class IndexWriting(IndexTables):
    """Syncs the tables with the workspace's files; one sync at a time per index object."""

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
            stat = stat_source_file(abs_path, self.workspace, source, self.sessions_dir())
            if stat is None:
                continue
            rel, mtime_ns, size = stat
            old = known.get(rel)
            if old is not None and (old.mtime_ns, old.size) == (mtime_ns, size):
                yield Scanned(rel, source, old)
                continue
            read = read_source_file(
                abs_path, self.workspace, source, sessions_dir=self.sessions_dir()
            )
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
            chunks = item.chunks or []
            for cid, chunk in zip(
                chunk_ids(item.source, item.path, chunks, model), chunks, strict=True
            ):
                row: dict[str, Any] = {
                    "id": cid,
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
