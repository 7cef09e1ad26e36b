"""``JsonFileManager``: a complete memwell backend whose index is one JSON file.

It is written only against memwell's public API: discovery and safe reads come from
``memwell.sources``, chunking, fusion, decay, MMR and snippets from ``memwell.retrieval``, and
embeddings from the runtime in the :class:`~memwell.descriptors.BackendContext`. It suits
small workspaces: every sync rewrites the file, and every search scans all chunks.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from memwell.descriptors import BackendContext
from memwell.errors import BackendUnavailableError
from memwell.manager import BaseMemoryManager, ProgressCallback
from memwell.models import (
    MemorySearchResult,
    MemoryStatus,
    ProbeResult,
    ReadFileResult,
    SourceCount,
    SyncProgress,
)
from memwell.retrieval.chunking import CHUNKER_VERSION, chunk_markdown
from memwell.retrieval.limits import enforce_input_limit
from memwell.retrieval.pipeline import fuse_hybrid, keyword_floor, rank_candidates
from memwell.retrieval.query_limit import bound_query
from memwell.retrieval.snippets import citations_enabled, to_results
from memwell.sources.discovery import list_memory_files, read_source_file, stat_source_file
from memwell.sources.paths import read_memory_file

from .config import JsonFileConfig
from .search import Row, keyword_candidates, text_terms, vector_candidates
from .store import INDEX_VERSION, IndexedChunk, IndexedFile, JsonIndex

BACKEND_NAME = "jsonfile"
INDEX_FILENAME = "jsonfile-index.json"


class JsonFileManager(BaseMemoryManager):
    """Markdown memory indexed into ``<index_dir>/jsonfile-index.json``.

    ``sync()`` re-reads only files whose size or mtime changed and re-embeds only chunks whose
    text is new. With ``sync.on_search`` (the default) every search syncs first, so the index
    follows edits without a file watcher.
    """

    def __init__(self, ctx: BackendContext, config: JsonFileConfig | None = None) -> None:
        self.workspace = ctx.workspace
        self.settings = ctx.settings
        self.runtime = ctx.embeddings
        self.config = config or JsonFileConfig()
        configured = Path(self.config.path or Path(self.settings.index_dir) / INDEX_FILENAME)
        self.index_path = self.workspace / configured.expanduser()
        self._index = JsonIndex.load(self.index_path)
        self._view: tuple[list[Row], np.ndarray | None] | None = None
        self._lock = threading.RLock()
        self.closed = False
        self.last_sync_error: str | None = None

    # -- indexing ---------------------------------------------------------------------------

    def _identity(self) -> dict[str, Any]:
        """What the index depends on; any change rebuilds it (and re-embeds everything)."""
        chunking = self.settings.chunking
        return {
            "version": INDEX_VERSION,
            "provider_key": self.runtime.provider_key(),
            "chunking": [chunking.tokens, chunking.overlap, CHUNKER_VERSION],
        }

    def sync(
        self,
        *,
        reason: str = "manual",
        force: bool = False,
        progress: ProgressCallback | None = None,
    ) -> None:
        """Bring the JSON index up to date with the Markdown files."""
        self._check_open()
        with self._lock:
            try:
                self._sync(force, progress)
            except Exception as exc:
                self.last_sync_error = f"{type(exc).__name__}: {exc}"
                raise
            self.last_sync_error = None

    def _sync(self, force: bool, progress: ProgressCallback | None) -> None:
        identity = self._identity()
        old = self._index
        previous = {} if force or old.identity != identity else old.files
        vectors = {c.hash: c.vector for f in previous.values() for c in f.chunks if c.vector}
        paths = list_memory_files(self.workspace, self.settings.extra_paths)
        files: dict[str, IndexedFile] = {}
        for done, abs_path in enumerate(paths, start=1):
            entry = self._index_file(abs_path, previous, vectors)
            if entry is not None:
                files[entry.path] = entry
            if progress is not None:
                progress(SyncProgress(completed=done, total=len(paths), label=abs_path.name))
        fresh = JsonIndex(identity=identity, files=files)
        if fresh != old or not self.index_path.exists():
            fresh.save(self.index_path, indent=self.config.indent)
            self._index = fresh
            self._view = None

    def _index_file(
        self,
        abs_path: Path,
        previous: dict[str, IndexedFile],
        vectors: dict[str, list[float]],
    ) -> IndexedFile | None:
        stat = stat_source_file(abs_path, self.workspace)
        if stat is None:
            return None
        rel, mtime_ns, size = stat
        known = previous.get(rel)
        if known is not None and (known.mtime_ns, known.size) == (mtime_ns, size):
            return known
        read = read_source_file(abs_path, self.workspace)
        if read is None:
            return None
        source, text = read
        if known is not None and known.hash == source.hash:
            return known.model_copy(update={"mtime_ns": source.mtime_ns, "size": source.size})
        chunks = enforce_input_limit(
            chunk_markdown(
                text, tokens=self.settings.chunking.tokens, overlap=self.settings.chunking.overlap
            ),
            self.runtime.max_input_tokens(),
        )
        if self.runtime.provider is not None:
            missing = list({c.hash: c.text for c in chunks if c.hash not in vectors}.items())
            matrix = self.runtime.embed_documents([text for _, text in missing])
            vectors.update((h, row.tolist()) for (h, _), row in zip(missing, matrix, strict=True))
        return IndexedFile(
            path=source.path,
            mtime_ns=source.mtime_ns,
            size=source.size,
            hash=source.hash,
            chunks=[
                IndexedChunk(
                    start_line=c.start_line,
                    end_line=c.end_line,
                    text=c.text,
                    hash=c.hash,
                    vector=vectors.get(c.hash),
                )
                for c in chunks
            ],
        )

    # -- search -----------------------------------------------------------------------------

    def _rows(self) -> tuple[list[Row], np.ndarray | None]:
        """Search rows and their vector matrix (``None`` without vectors), cached per index."""
        with self._lock:
            if self._view is None:
                rows: list[Row] = []
                vectors: list[list[float]] = []
                for file in self._index.files.values():
                    for i, chunk in enumerate(file.chunks):
                        rows.append(
                            Row(
                                id=f"{file.path}:{chunk.start_line}:{i}",
                                path=file.path,
                                start_line=chunk.start_line,
                                end_line=chunk.end_line,
                                text=chunk.text,
                                terms=text_terms(chunk.text),
                            )
                        )
                        if chunk.vector is not None:
                            vectors.append(chunk.vector)
                complete = bool(rows) and len(vectors) == len(rows)
                matrix = np.asarray(vectors, dtype=np.float32) if complete else None
                self._view = (rows, matrix)
            return self._view

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
        text = bound_query(query, self.settings.query.max_chars) if isinstance(query, str) else ""
        if not text or (sources is not None and "memory" not in sources):
            return []
        if self.settings.sync.on_search:
            self.sync(reason="search")
        limit = max(1, max_results or self.settings.query.max_results)
        floor = self.settings.query.min_score if min_score is None else min_score
        hybrid = self.settings.query.hybrid
        pool = min(200, limit * hybrid.candidate_multiplier)
        rows, matrix = self._rows()
        if matrix is None or self.runtime.provider is None:
            ranked = rank_candidates(
                keyword_candidates(text, rows, pool, boost=True), hybrid, mtime_of=self._mtime
            )
            found = keyword_floor(ranked, floor, limit)
        else:
            keyword = keyword_candidates(text, rows, pool, boost=False)
            vector = vector_candidates(self.runtime.embed_query(text), rows, matrix, pool)
            found = fuse_hybrid(
                vector, keyword, hybrid, min_score=floor, max_results=limit, mtime_of=self._mtime
            )
        return to_results(found, citations=citations_enabled(self.settings.citations, session_key))

    def content_version(self) -> str:
        """For the recall cache: the index file's stat and, as every search syncs first with
        ``sync.on_search``, the memory files' stats."""
        try:
            st = self.index_path.stat()
            parts = [f"{st.st_ino}:{st.st_mtime_ns}:{st.st_size}"]
        except OSError:
            parts = ["-"]
        if self.settings.sync.on_search:
            for path in list_memory_files(self.workspace, self.settings.extra_paths):
                parts.append(repr(stat_source_file(path, self.workspace)))
        return "|".join(parts)

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
        with self._lock:
            index = self._index
        fields: dict[str, Any] = {"provider": "none", "search_mode": "fts-only"}
        try:
            provider = self.runtime.provider
        except Exception as exc:
            fields.update(search_mode="disabled", provider_unavailable_reason=str(exc))
        else:
            if provider is not None:
                fields.update(provider=provider.id, model=provider.model, search_mode="hybrid")
        chunks = index.chunk_count
        return MemoryStatus(
            backend=BACKEND_NAME,
            query_max_chars=self.settings.query.max_chars,
            requested_provider=self.settings.provider,
            files=len(index.files),
            chunks=chunks,
            vectors=index.vector_count if fields["search_mode"] == "hybrid" else None,
            workspace_dir=str(self.workspace),
            db_path=str(self.index_path),
            extra_paths=list(self.settings.extra_paths),
            source_counts=[SourceCount(source="memory", files=len(index.files), chunks=chunks)],
            last_sync_error=self.last_sync_error,
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
        return self.probe_embedding()

    def close(self) -> None:
        self.closed = True

    def _check_open(self) -> None:
        if self.closed:
            raise BackendUnavailableError("memory manager is closed")
