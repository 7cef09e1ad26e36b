"""Exact vector search: an in-memory float32 matrix (numpy) or sqlite-vec's KNN."""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any

from memwell.plugin_sdk import lazy_module, single_blas_thread

from .store import IndexStore

if TYPE_CHECKING:
    import numpy as np
    from memwell.plugin import Matrix, Vector
else:
    np = lazy_module("numpy")

#: Extra candidates rescored exactly beyond ``limit`` (the product's rounding is ~1e-5).
RESCORE_MARGIN = 32
#: Queries per matrix product in :meth:`VectorIndex.search_many` (bounds the score matrix).
QUERY_GROUP = 64


def _exact_top(
    rowids: np.ndarray[Any, Any], matrix: Matrix, query: Vector, approx: Matrix, limit: int
) -> list[tuple[int, float]]:
    """The ``limit`` best rows by an exact float64 rescoring of the approximate best ones;
    ties broken by rowid."""
    pool = min(approx.shape[0], limit + RESCORE_MARGIN)
    if pool < approx.shape[0]:
        candidates = np.argpartition(-approx, pool - 1)[:pool]
    else:
        candidates = np.arange(approx.shape[0])
    exact = np.sum(matrix[candidates].astype(np.float64) * query.astype(np.float64), axis=1)
    order = np.lexsort((rowids[candidates], -exact))[:limit]
    return [(int(rowids[candidates[i]]), float(exact[i])) for i in order]


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
        self._loaded: tuple[np.ndarray[Any, Any], Matrix] | None = None
        """(rowids, matrix) for :attr:`_key`; ``None`` until the first search."""

    def active_engine(self, store: IndexStore) -> str:
        if self.engine == "sqlite-vec" and store.vec_dims is not None:
            return "sqlite-vec"
        return "numpy"

    def _matrix_for(self, store: IndexStore, model: str, generation: int) -> tuple[Any, Matrix]:
        key = (str(store.path), store.data_version(), generation, model)
        with self._lock:
            if key != self._key or self._loaded is None:
                self._loaded = store.load_vectors(model)
                self._key = key
            return self._loaded

    def search(
        self, store: IndexStore, model: str, query: Vector, limit: int, generation: int
    ) -> list[tuple[int, float]]:
        """(rowid, cosine similarity) of the ``limit`` nearest chunks, best first."""
        return self.search_many(store, model, query.reshape(1, -1), limit, generation)[0]

    def search_many(
        self, store: IndexStore, model: str, queries: Matrix, limit: int, generation: int
    ) -> list[list[tuple[int, float]]]:
        """:meth:`search` for each row of ``queries``, with one matrix product for all.

        The product picks each query's ``limit + RESCORE_MARGIN`` best rows; those are then
        rescored one row at a time in float64, so a query's hits and scores do not depend on
        which other queries share the product (BLAS kernels round differently by shape).
        """
        if limit <= 0 or queries.shape[0] == 0:
            return [[] for _ in range(queries.shape[0])]
        if self.active_engine(store) == "sqlite-vec":
            return [store.vec_knn(query, limit) for query in queries]
        rowids, matrix = self._matrix_for(store, model, generation)
        if matrix.shape[0] == 0 or matrix.shape[1] != queries.shape[1]:
            return [[] for _ in range(queries.shape[0])]
        out: list[list[tuple[int, float]]] = []
        for start in range(0, queries.shape[0], QUERY_GROUP):
            group = queries[start : start + QUERY_GROUP]
            with single_blas_thread():
                approx = group @ matrix.T
            out += [
                _exact_top(rowids, matrix, q, a, limit) for q, a in zip(group, approx, strict=True)
            ]
        return out

    def preload(self, store: IndexStore, model: str, generation: int) -> int:
        """Load the vector matrix now (numpy engine); returns the number of vectors."""
        if self.active_engine(store) == "sqlite-vec":
            return 0
        return int(self._matrix_for(store, model, generation)[1].shape[0])

    def invalidate(self) -> None:
        with self._lock:
            self._key = None
            self._loaded = None
