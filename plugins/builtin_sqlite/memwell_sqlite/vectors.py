"""Exact vector search: an in-memory float32 matrix (numpy) or sqlite-vec's KNN."""

from __future__ import annotations

import threading
from typing import Any

import numpy as np
from memwell.blas import single_blas_thread
from memwell.embeddings import Matrix, Vector

from .store import IndexStore


class VectorIndex:
    """Top-k cosine search over the chunk vectors of one model.

    ``engine="numpy"`` keeps every vector in a matrix that is reloaded when the index changes
    (a generation counter from the manager plus SQLite's ``data_version`` for writes by other
    processes); a mat-vec over 100k x 384 takes a few milliseconds. ``engine="sqlite-vec"``
    asks the vec0 table instead and keeps nothing in memory.
    """

    def __init__(self, engine: str) -> None:
        self.engine = engine
        self._lock = threading.Lock()
        self._key: tuple[Any, ...] | None = None
        self._rowids: np.ndarray[Any, Any] = np.zeros(0, dtype=np.int64)
        self._matrix: Matrix = np.zeros((0, 0), dtype=np.float32)

    def active_engine(self, store: IndexStore) -> str:
        if self.engine == "sqlite-vec" and store.vec_dims is not None:
            return "sqlite-vec"
        return "numpy"

    def _matrix_for(self, store: IndexStore, model: str, generation: int) -> tuple[Any, Matrix]:
        version = store.conn.execute("PRAGMA data_version").fetchone()[0]
        key = (str(store.path), version, generation, model)
        with self._lock:
            if key != self._key:
                self._rowids, self._matrix = store.load_vectors(model)
                self._key = key
            return self._rowids, self._matrix

    def search(
        self, store: IndexStore, model: str, query: Vector, limit: int, generation: int
    ) -> list[tuple[int, float]]:
        """(rowid, cosine similarity) of the ``limit`` nearest chunks, best first."""
        if limit <= 0:
            return []
        if self.active_engine(store) == "sqlite-vec":
            return store.vec_knn(query, limit)
        rowids, matrix = self._matrix_for(store, model, generation)
        if matrix.shape[0] == 0 or matrix.shape[1] != query.shape[0]:
            return []
        with single_blas_thread():
            scores = matrix @ query
        k = min(limit, scores.shape[0])
        top = np.argpartition(-scores, k - 1)[:k] if k < scores.shape[0] else np.arange(k)
        order = top[np.argsort(-scores[top], kind="stable")]
        return [(int(rowids[i]), float(scores[i])) for i in order]

    def invalidate(self) -> None:
        with self._lock:
            self._key = None
            self._rowids = np.zeros(0, dtype=np.int64)
            self._matrix = np.zeros((0, 0), dtype=np.float32)
