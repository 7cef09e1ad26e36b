"""The embedding-provider contract and small helpers every provider shares."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from memwell.util.lazy_import import lazy_logger, lazy_module

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    Vector = npt.NDArray[np.float32]
    Matrix = npt.NDArray[np.float32]
else:
    np = lazy_module("numpy")

log = lazy_logger(__name__)
_warned: set[str] = set()
_ARRAY_ALIASES = ("Vector", "Matrix")


def __getattr__(name: str) -> Any:
    """``Vector`` and ``Matrix`` (float32 NumPy arrays), made on first use: importing this
    module does not import NumPy."""
    if name in _ARRAY_ALIASES:
        import numpy.typing as npt

        alias = npt.NDArray[np.float32]
        globals().update(dict.fromkeys(_ARRAY_ALIASES, alias))
        return alias
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


@runtime_checkable
class EmbeddingProvider(Protocol):
    """What a provider plugin's ``create`` returns.

    ``dims`` may be ``None`` until the first response; the core learns it from the vectors.
    Vectors may be any float sequences; the core converts them to L2-normalised float32.
    Optional methods the core calls when present: ``embed_queries(texts)`` (several queries
    in one request) and ``prepare_queries()`` (a session's warm-up: get ready for queries).
    An optional ``languages`` attribute (ISO 639-1 codes) says which languages a
    multilingual model matches a question with an answer across; the score calibration
    measures it across them too (:func:`memwell.retrieval.calibration.probe_languages`).
    """

    @property
    def id(self) -> str:
        """Provider id, e.g. ``"openai"``."""
        ...

    @property
    def model(self) -> str:
        """Model name as sent to the provider (prefixes stripped)."""
        ...

    @property
    def dims(self) -> int | None:
        """Vector dimensions, or ``None`` until known."""
        ...

    @property
    def max_input_tokens(self) -> int | None:
        """The model's input limit, or ``None`` to use the known table."""
        ...

    def embed_query(self, text: str) -> Sequence[float] | Vector:
        """Embed one search query (providers with input types use the query type)."""
        ...

    def embed_batch(self, texts: Sequence[str]) -> Sequence[Sequence[float]] | Matrix:
        """Embed documents, one vector per text, in order."""
        ...

    def cache_key_data(self) -> dict[str, Any]:
        """JSON data naming the vector space: the provider, the model, and every setting that
        changes the vectors (dimensions, base URL, task type...), never a secret.

        memwell stores its hash with the index and re-embeds when it changes, so vectors of
        two spaces are never compared.
        """
        ...


class EmbeddingService(Protocol):
    """What a backend's context offers for embedding (``BackendContext.embeddings``): the
    selected provider behind core's selection, fallback, retries and input limits
    (:class:`memwell.providers.runtime.EmbeddingRuntime` is the one core passes)."""

    @property
    def provider(self) -> EmbeddingProvider | None:
        """The selected provider, ``None`` in keyword-only mode."""
        ...

    @property
    def dims(self) -> int | None:
        """The vectors' dimension, once known."""
        ...

    def provider_key(self) -> str:
        """The cache key of the selected provider and model."""
        ...

    def max_input_tokens(self) -> int:
        """The longest input the provider embeds whole, in tokens."""
        ...

    def embed_query(self, text: str) -> Vector:
        """One query's unit vector."""
        ...

    def embed_queries(self, texts: Sequence[str]) -> Matrix:
        """Queries' unit vectors, one row each."""
        ...

    def embed_documents(self, texts: Sequence[str]) -> Matrix:
        """Documents' unit vectors, one row each, in batches within the provider's limits."""
        ...


def cache_key_data(provider: EmbeddingProvider) -> dict[str, Any]:
    """Data identifying the vector space of ``provider`` (its ``cache_key_data()``).

    A provider written before the method joined the protocol gets ``{provider, model}``, with a
    warning: settings that change its vectors would then go unnoticed.
    """
    method = getattr(provider, "cache_key_data", None)
    if callable(method):
        data = method()
        if isinstance(data, dict):
            return data
    if provider.id not in _warned:
        _warned.add(provider.id)
        log.warning(
            "embedding provider %r has no cache_key_data(); its index identity is only its "
            "id and model, so a setting that changes its vectors will not trigger a re-embed",
            provider.id,
        )
    return {"provider": provider.id, "model": provider.model}


def provider_key(provider: EmbeddingProvider | None) -> str:
    """A stable hash of the provider's vector space; changes force a re-embed."""
    data = (
        {"provider": "none", "model": "fts-only"} if provider is None else cache_key_data(provider)
    )
    return hashlib.sha256(json.dumps(data, sort_keys=True).encode()).hexdigest()


def to_unit_matrix(vectors: Sequence[Sequence[float]] | Matrix) -> Matrix:
    """Convert vectors to a float32 matrix with L2-normalised rows; non-finite values become 0."""
    arr = np.asarray(vectors, dtype=np.float32)
    if arr.ndim == 1:
        arr = arr.reshape(1, -1)
    arr = np.nan_to_num(arr, nan=0.0, posinf=0.0, neginf=0.0)
    norms = np.linalg.norm(arr, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    unit: Matrix = (arr / norms).astype(np.float32, copy=False)
    return unit


def strip_model_prefix(model: str, prefixes: Sequence[str]) -> str:
    """Remove a provider prefix such as ``openai/`` from a model name."""
    for prefix in prefixes:
        if model.startswith(prefix):
            return model[len(prefix) :]
    return model
