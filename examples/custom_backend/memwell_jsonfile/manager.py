"""``JsonFileManager``: a complete memwell backend whose index is one JSON file.

It is written only against :mod:`memwell.plugin`: :class:`~memwell.plugin.MemoryBackend` owns
the lifecycle (search preamble, citations, safe reads, status skeleton, probes, async
wrappers), so this module only indexes and scores. It suits small workspaces: every sync
rewrites the file, and every search scans all chunks.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
from memwell.plugin import (
    BackendContext,
    Candidate,
    MemoryBackend,
    ProgressCallback,
    SearchRequest,
    SourceCount,
    list_memory_files,
    stat_source_file,
)

from .config import JsonFileConfig
from .search import Row, keyword_candidates, text_terms, vector_candidates
from .store import INDEX_VERSION, IndexedChunk, IndexedFile, JsonIndex

INDEX_FILENAME = "jsonfile-index.json"


class JsonFileManager(MemoryBackend):
    """Markdown memory indexed into ``<index_dir>/jsonfile-index.json``.

    ``sync()`` re-reads only files whose size or mtime changed and re-embeds only chunks whose
    text is new. With ``sync.on_search`` (the default) every search syncs first, so the index
    follows edits without a file watcher.
    """

    name = "jsonfile"

    def __init__(self, ctx: BackendContext, config: JsonFileConfig) -> None:
        super().__init__(ctx)
        self.config = config
        configured = Path(config.path or Path(self.settings.index_dir) / INDEX_FILENAME)
        self.index_path = self.workspace / configured.expanduser()
        self._index = JsonIndex.load(self.index_path)
        self._view: tuple[list[Row], np.ndarray | None] | None = None

    # -- indexing ---------------------------------------------------------------------------

    def _sync(self, *, reason: str, force: bool, progress: ProgressCallback | None) -> None:
        identity = {"version": INDEX_VERSION, **self.index_identity()}
        old = self._index
        previous = {} if force or old.identity != identity else old.files
        vectors = {c.hash: c.vector for f in previous.values() for c in f.chunks if c.vector}
        files: dict[str, IndexedFile] = {}
        for found in self.scan_files(previous, progress):
            if found.chunks is None:  # same content: keep its chunks
                chunks = previous[found.path].chunks
            else:
                new = self.embed_new(found.chunks, vectors)
                vectors.update((h, vector.tolist()) for h, vector in new.items())
                chunks = [
                    IndexedChunk(
                        start_line=c.start_line,
                        end_line=c.end_line,
                        text=c.text,
                        hash=c.hash,
                        vector=vectors.get(c.hash),
                    )
                    for c in found.chunks
                ]
            files[found.path] = IndexedFile(
                path=found.path,
                mtime_ns=found.mtime_ns,
                size=found.size,
                hash=found.hash,
                chunks=chunks,
            )
        fresh = JsonIndex(identity=identity, files=files)
        if fresh != old or not self.index_path.exists():
            fresh.save(self.index_path, indent=self.config.indent)
            with self._lock:
                self._index = fresh
                self._view = None

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

    def _search(self, request: SearchRequest) -> list[Candidate]:
        rows, matrix = self._rows()
        if matrix is None or self.runtime.provider is None:
            keyword = keyword_candidates(request.query, rows, request.pool, boost=True)
            return self.rank_keyword(keyword, request)
        keyword = keyword_candidates(request.query, rows, request.pool, boost=False)
        query_vector = self.runtime.embed_query(request.query)
        vector = vector_candidates(query_vector, rows, matrix, request.pool)
        return self.rank_hybrid(vector, keyword, request)

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

    # -- status -----------------------------------------------------------------------------

    def _index_status(self) -> dict[str, Any]:
        with self._lock:
            index = self._index
        files, chunks = len(index.files), index.chunk_count
        return {
            "files": files,
            "chunks": chunks,
            "vectors": index.vector_count,
            "db_path": str(self.index_path),
            "source_counts": [SourceCount(source="memory", files=files, chunks=chunks)],
        }
