"""The ``late-interaction`` reranker: MaxSim over the shipped MiniLM's token vectors.

ColBERT's late interaction without new weights: the query and each candidate's text go
through the same all-MiniLM-L6-v2 the local provider embeds with (the numpy encoder,
:meth:`~memwell_local.numpy_bert.NumpyBertEncoder.token_vectors`), and a candidate scores the
mean, over the query's tokens, of each token's best cosine with one of the candidate's tokens.
Candidates' token vectors are computed at query time (nothing is stored in the index) and kept
in a bounded in-process cache, so a text is encoded once per process. Opt-in
(``[rerank] provider = "late-interaction"``, ``[rerank] weight`` to blend it with the backend's
score): it costs seconds per query on two cores when its candidates are not cached yet, and
did not win on every development set (docs/quality.md).
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Sequence
from pathlib import Path
from typing import Annotated

import msgspec
import numpy as np
from memwell.plugin import ProviderContext, ProviderUnavailableError, Record

from .bert_kernels import Array
from .numpy_bert import NumpyBertEncoder
from .provider import _locate_model

RERANKER_ID = "late-interaction"
DEFAULT_LATE_MODEL = "all-MiniLM-L6-v2"


class LateInteractionConfig(Record, forbid_unknown_fields=True):
    """The ``[providers.late-interaction]`` configuration section."""

    model_path: str | None = None
    """A local BERT-family sentence-transformers directory; overrides the model name."""
    max_seq_length: Annotated[int, msgspec.Meta(ge=8, le=512)] = 256
    """Tokens of a text compared (longer texts are cut)."""
    cache_mb: Annotated[int, msgspec.Meta(ge=0)] = 64
    """Memory for candidates' token vectors (float16), least recently used dropped first."""


def maxsim(query: Array, document: Array) -> float:
    """Late-interaction score of two L2-normalised token matrices (rows are tokens)."""
    return float((query @ document.T.astype(np.float32)).max(axis=1).mean())


class TokenCache:
    """Token matrices by text, bounded by bytes, least recently used dropped first."""

    def __init__(self, budget_bytes: int) -> None:
        self.budget = budget_bytes
        self.size = 0
        self._rows: OrderedDict[str, Array] = OrderedDict()

    def get(self, text: str) -> Array | None:
        rows = self._rows.get(text)
        if rows is not None:
            self._rows.move_to_end(text)
        return rows

    def put(self, text: str, rows: Array) -> None:
        if text in self._rows or rows.nbytes > self.budget:
            return
        self._rows[text] = rows
        self.size += rows.nbytes
        while self.size > self.budget:
            _, dropped = self._rows.popitem(last=False)
            self.size -= dropped.nbytes


class LateInteractionReranker:
    """Scores documents by MaxSim against the query (see the module docstring)."""

    id = RERANKER_ID

    def __init__(self, model: str, encoder: NumpyBertEncoder, config: LateInteractionConfig):
        self.model = model
        self.encoder = encoder
        self.cache = TokenCache(config.cache_mb * 1024 * 1024)

    def token_rows(self, texts: Sequence[str]) -> list[Array]:
        """Each text's token matrix (float16), encoding only the texts not cached."""
        rows: dict[str, Array] = {}
        missing = []
        for text in dict.fromkeys(texts):
            cached = self.cache.get(text)
            if cached is None:
                missing.append(text)
            else:
                rows[text] = cached
        for text, fresh in zip(missing, self.encoder.token_vectors(missing), strict=True):
            rows[text] = fresh.astype(np.float16)
            self.cache.put(text, rows[text])
        return [rows[t] for t in texts]

    def rerank(self, query: str, documents: Sequence[str]) -> list[float]:
        """One score in [0, 1] per document: its MaxSim with ``query``, negatives as 0."""
        if not documents:
            return []
        q = self.encoder.token_vectors([query])[0]
        return [max(0.0, min(1.0, maxsim(q, rows))) for rows in self.token_rows(documents)]


def create_reranker(ctx: ProviderContext) -> LateInteractionReranker:
    """Build the reranker; :class:`ProviderUnavailableError` when the model is not a local
    BERT the numpy encoder runs."""
    config = (
        ctx.plugin_config
        if isinstance(ctx.plugin_config, LateInteractionConfig)
        else LateInteractionConfig()
    )
    try:
        source = _locate_model(ctx.model, config.model_path, ctx.workspace)
    except ProviderUnavailableError as exc:
        raise ProviderUnavailableError(
            f"late-interaction reranker: {exc}", provider=RERANKER_ID
        ) from exc
    encoder = NumpyBertEncoder.load(Path(source), config.max_seq_length)
    if encoder is None:
        raise ProviderUnavailableError(
            f"late-interaction reranker: {source} is not a BERT model the numpy encoder runs",
            provider=RERANKER_ID,
        )
    return LateInteractionReranker(ctx.model, encoder, config)
