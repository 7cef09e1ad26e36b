""":class:`QueryVectors`: a backend's query embeddings, shared with the recall cache.

The semantic tier of the recall cache needs a query's vector before it knows whether the
backend must run; the backend then needs the same vector. Both ask one :class:`QueryVectors`,
which remembers the last vectors it computed, so each query is embedded once.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Sequence
from typing import TYPE_CHECKING

from memwell.providers.runtime import EmbeddingRuntime
from memwell.util.lazy_import import lazy_module

if TYPE_CHECKING:
    import numpy as np

    from memwell.contract.embeddings import Matrix, Vector
else:
    np = lazy_module("numpy")

#: Query vectors remembered per runtime (384 floats each for MiniLM: about 0.4 MB in all).
MEMO_SIZE = 256


class QueryVectors:
    """Embeds queries through ``runtime`` and remembers the last :data:`MEMO_SIZE` vectors.

    :meth:`embed_many` uses the provider's optional ``embed_queries(texts)`` (one batch of
    query-typed inputs) and otherwise embeds one query at a time: a provider's document
    ``embed_batch`` may use another input type, so it is never used for queries.
    """

    def __init__(self, runtime: EmbeddingRuntime, size: int = MEMO_SIZE) -> None:
        self.runtime = runtime
        self.size = size
        self._memo: OrderedDict[tuple[str, str], Vector] = OrderedDict()
        self._lock = threading.Lock()

    @property
    def space(self) -> str:
        """The runtime's vector space (provider and model)."""
        return self.runtime.provider_key()

    def _recall(self, key: tuple[str, str]) -> Vector | None:
        with self._lock:
            vector = self._memo.get(key)
            if vector is not None:
                self._memo.move_to_end(key)
            return vector

    def _remember(self, key: tuple[str, str], vector: Vector) -> None:
        with self._lock:
            self._memo[key] = vector
            self._memo.move_to_end(key)
            while len(self._memo) > self.size:
                self._memo.popitem(last=False)

    def embed(self, text: str) -> Vector:
        """The unit query vector of ``text`` (from the memo when it was embedded lately)."""
        key = (self.space, text)
        vector = self._recall(key)
        if vector is None:
            vector = self.runtime.embed_query(text)
            self._remember(key, vector)
        return vector

    def warm(self) -> None:
        """Load the model and prepare it for queries (a session's warm-up)."""
        self.embed("warm-up")
        self.runtime.prepare_queries()

    def embed_many(self, texts: Sequence[str]) -> Matrix:
        """One unit row per text, in order; the texts not in the memo go in one batch."""
        space = self.space
        rows: list[Vector | None] = [self._recall((space, t)) for t in texts]
        missing = list(dict.fromkeys(t for t, row in zip(texts, rows, strict=True) if row is None))
        fresh = dict(zip(missing, self._embed_batch(missing), strict=True)) if missing else {}
        for text, vector in fresh.items():
            self._remember((space, text), vector)
        out = [row if row is not None else fresh[t] for t, row in zip(texts, rows, strict=True)]
        if not out:
            return np.zeros((0, self.runtime.dims or 0), dtype=np.float32)
        return np.vstack(out)

    def _embed_batch(self, texts: list[str]) -> list[Vector]:
        return list(self.runtime.embed_queries(texts))
