"""The ``voyage`` reranker: Voyage AI's rerank API through ``voyageai.Client.rerank``.

Key and base URL resolve like the embedding provider's (``[providers.voyage]``, ``[remote]``,
``VOYAGE_API_KEY``). The client makes one attempt (``max_retries=0``); its relevance scores are
in [0, 1] already. SDK errors become :class:`~memwell.contract.errors.ProviderError`.
"""

from __future__ import annotations

from collections.abc import Sequence

from memwell.plugin import ProviderError, RemoteEndpoint
from memwell.plugin_sdk import status_error, transport_error
from voyageai import error
from voyageai.client import Client


class VoyageReranker:
    """Reranks with a Voyage rerank model (``rerank-2.5``, ``rerank-2.5-lite``...)."""

    id = "voyage"

    def __init__(self, model: str, endpoint: RemoteEndpoint) -> None:
        self.model = model
        self.client = Client(
            api_key=endpoint.api_key,
            max_retries=0,
            timeout=endpoint.timeout_seconds,
            base_url=endpoint.base_url,
        )

    def rerank(self, query: str, documents: Sequence[str]) -> list[float]:
        """One relevance score per document, in input order."""
        if not documents:
            return []
        try:
            reply = self.client.rerank(query, list(documents), model=self.model, truncation=True)
        except (error.Timeout, error.APIConnectionError) as exc:
            raise transport_error(self.id, exc, what="rerank") from exc
        except error.VoyageError as exc:
            message = exc.user_message or str(exc)
            if exc.http_status is None:
                raise ProviderError(f"voyage rerank failed: {message}", provider=self.id) from exc
            raise status_error(self.id, exc.http_status, message, what="rerank") from exc
        scores = [0.0] * len(documents)
        for result in reply.results:
            scores[result.index] = float(result.relevance_score)
        return scores
