"""A deterministic, offline embedding provider for tests (never selected in production)."""

from __future__ import annotations

import hashlib
import re
import threading
from collections.abc import Callable, Iterator, Sequence
from types import SimpleNamespace

import numpy as np

from memwell.contract.descriptors import EmbeddingProviderSpec, ProviderContext
from memwell.contract.embeddings import Matrix, Vector
from memwell.contract.hookspecs import hookimpl

_WORD = re.compile(r"\w+", re.UNICODE)


class HashEmbeddingProvider:
    """Feature-hashing bag of words (plus character trigrams) into ``dims`` dimensions.

    Texts sharing words get similar vectors, so tests can reason about rankings without a
    model. ``calls`` and ``embedded`` count requests and texts; ``fail`` (if set) is called
    with the batch before embedding and may raise to simulate provider faults.
    """

    id = "hash"

    def __init__(self, model: str = "hash-64", dims: int = 64) -> None:
        self.model = model
        self.dims: int | None = dims
        self.max_input_tokens: int | None = 8192
        self._dims = dims
        self.calls = 0
        self.embedded = 0
        self.fail: Callable[[Sequence[str]], None] | None = None
        self._lock = threading.Lock()

    def _features(self, text: str) -> Iterator[str]:
        for word in _WORD.findall(text.lower()):
            yield word
            padded = f"#{word}#"
            for i in range(len(padded) - 2):
                yield padded[i : i + 3]

    def _vector(self, text: str) -> Vector:
        vec = np.zeros(self._dims, dtype=np.float32)
        for feature in self._features(text):
            digest = hashlib.blake2b(feature.encode(), digest_size=8).digest()
            index = int.from_bytes(digest[:4], "little") % self._dims
            vec[index] += 1.0 if digest[4] & 1 else -1.0
        if not vec.any():
            vec[0] = 1.0
        return vec

    def embed_query(self, text: str) -> Vector:
        row: Vector = self.embed_batch([text])[0]
        return row

    def embed_batch(self, texts: Sequence[str]) -> Matrix:
        with self._lock:
            if self.fail is not None:
                self.fail(texts)
            self.calls += 1
            self.embedded += len(texts)
        if not texts:
            return np.zeros((0, self._dims), dtype=np.float32)
        return np.stack([self._vector(t) for t in texts])

    def embed_queries(self, texts: Sequence[str]) -> Matrix:
        """Query vectors in one request (a symmetric model: the same as :meth:`embed_batch`)."""
        return self.embed_batch(texts)

    def cache_key_data(self) -> dict[str, object]:
        return {"provider": self.id, "model": self.model, "dims": self._dims}


def hash_provider_plugin(
    provider: HashEmbeddingProvider | None = None, *, auto_priority: int | None = None
) -> SimpleNamespace:
    """A plugin object registering ``provider`` (or a fresh one per create) as ``"hash"``.

    Example::

        registry = PluginRegistry(load_entry_points=False)
        registry.register(hash_provider_plugin(shared), "hash")
    """

    def create(ctx: ProviderContext) -> HashEmbeddingProvider:
        if provider is not None:
            return provider
        dims = 64
        match = re.fullmatch(r"hash-(\d+)", ctx.model)
        if match:
            dims = int(match.group(1))
        return HashEmbeddingProvider(model=ctx.model, dims=dims)

    spec = EmbeddingProviderSpec(
        id="hash",
        create=create,
        default_model="hash-64",
        transport="local",
        auto_priority=auto_priority,
        description="Deterministic feature-hashing embeddings for tests",
    )

    @hookimpl
    def memwell_embedding_providers() -> list[EmbeddingProviderSpec]:
        return [spec]

    return SimpleNamespace(memwell_embedding_providers=memwell_embedding_providers)
