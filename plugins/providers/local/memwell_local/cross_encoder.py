"""The ``cross-encoder`` reranker: a sentence-transformers ``CrossEncoder`` run offline.

The model comes from ``rerank.model`` (default :data:`DEFAULT_RERANK_MODEL`) or
``[providers.cross-encoder] model_path``, located like the embedding models (a directory, or
the local Hugging Face cache; never downloaded). Scores are the model's logits through a
sigmoid, so they are in (0, 1) and ``min_score`` applies to them.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Annotated, Any

import msgspec
from memwell.plugin import ProviderContext, ProviderUnavailableError, Record

from .provider import _has_module, _locate_model

if TYPE_CHECKING:
    from sentence_transformers import CrossEncoder

RERANKER_ID = "cross-encoder"
DEFAULT_RERANK_MODEL = "cross-encoder/ms-marco-MiniLM-L-6-v2"


class CrossEncoderConfig(Record, forbid_unknown_fields=True):
    """The ``[providers.cross-encoder]`` configuration section."""

    model_path: str | None = None
    """A local cross-encoder model directory; overrides the model name."""
    device: str = "cpu"
    batch_size: Annotated[int, msgspec.Meta(ge=1)] = 16
    max_length: Annotated[int, msgspec.Meta(ge=8)] = 512


def _sigmoid(x: float) -> float:
    if x < -60:
        return 0.0
    return 1.0 / (1.0 + math.exp(-x))


class CrossEncoderReranker:
    """Scores (query, document) pairs with a cross-encoder; loads it on first use."""

    id = RERANKER_ID

    def __init__(self, model: str, source: str, config: CrossEncoderConfig) -> None:
        self.model = model
        self.source = source
        self.config = config
        self._encoder: CrossEncoder | None = None

    def _load(self) -> CrossEncoder:
        if self._encoder is None:
            from sentence_transformers import CrossEncoder

            self._encoder = CrossEncoder(
                self.source,
                device=self.config.device,
                max_length=self.config.max_length,
                local_files_only=True,
            )
        return self._encoder

    def rerank(self, query: str, documents: Sequence[str]) -> list[float]:
        """One score in (0, 1) per document, in input order."""
        if not documents:
            return []
        logits: Any = self._load().predict(
            [(query, doc) for doc in documents],
            batch_size=self.config.batch_size,
            show_progress_bar=False,
            convert_to_numpy=True,
        )
        return [_sigmoid(float(value)) for value in logits.reshape(len(documents), -1)[:, 0]]


def create_reranker(ctx: ProviderContext) -> CrossEncoderReranker:
    """Build the reranker; :class:`ProviderUnavailableError` when it cannot run offline."""
    config = (
        ctx.plugin_config
        if isinstance(ctx.plugin_config, CrossEncoderConfig)
        else CrossEncoderConfig()
    )
    missing = [m for m in ("sentence_transformers", "torch") if not _has_module(m)]
    if missing:
        raise ProviderUnavailableError(
            f"the cross-encoder reranker needs {' and '.join(missing)}: install "
            "memwell-local[torch] with a CPU torch",
            provider=RERANKER_ID,
        )
    try:
        source = _locate_model(ctx.model, config.model_path, ctx.workspace)
    except ProviderUnavailableError as exc:
        raise ProviderUnavailableError(
            f"cross-encoder reranker: {exc}", provider=RERANKER_ID
        ) from exc
    return CrossEncoderReranker(ctx.model, source, config)
