"""The Mistral embeddings client (``mistralai`` 3.x): ``POST {base}/embeddings``.

The SDK appends ``/v1`` itself, so a configured base URL ending in ``/v1`` (the reference's
form) is trimmed before it is handed over.
"""

from __future__ import annotations

from collections.abc import Sequence

import httpx2
from memwell.plugin import ProviderContext, ProviderError, RemoteEmbeddingProvider, RemoteEndpoint
from memwell.plugin_sdk import status_error, transport_error
from mistralai.client import Mistral, errors
from mistralai.client.types import UNSET


def mistral_client(endpoint: RemoteEndpoint, base_url: str) -> Mistral:
    """The official client for ``endpoint``, with SDK retries off (the core retries)."""
    return Mistral(
        api_key=endpoint.api_key,
        server_url=base_url.removesuffix("/v1"),
        timeout_ms=max(1, round(endpoint.timeout_seconds * 1000)),
        retry_config=None,
    )


def mistral_sdk_error(
    provider: str, exc: Exception, *, what: str = "embeddings"
) -> ProviderError | None:
    """A ``mistralai`` exception as a :class:`ProviderError`; ``None`` if not the SDK's."""
    if isinstance(exc, errors.MistralError):
        return status_error(provider, exc.status_code, exc.message, what=what)
    if isinstance(exc, (httpx2.TransportError, errors.NoResponseError)):
        return transport_error(provider, exc, what=what)
    return None


class MistralEmbeddingProvider(RemoteEmbeddingProvider):
    """Embeddings through the official ``mistralai`` client, with SDK retries disabled."""

    id = "mistral"
    model_prefixes = ("mistral/",)
    default_base_url = "https://api.mistral.ai/v1"

    def __init__(self, ctx: ProviderContext, endpoint: RemoteEndpoint) -> None:
        super().__init__(ctx, endpoint)
        self.client = mistral_client(endpoint, self.base_url)

    def _request(self, texts: list[str], *, query: bool) -> Sequence[Sequence[float] | None]:
        response = self.client.embeddings.create(
            model=self.model,
            inputs=texts,
            output_dimension=self.output_dimensionality or UNSET,
            http_headers=self.endpoint.headers or None,
        )
        ordered = sorted(
            enumerate(response.data),
            key=lambda pair: pair[0] if pair[1].index is None else pair[1].index,
        )
        return [item.embedding for _, item in ordered]

    def _sdk_error(self, exc: Exception) -> ProviderError | None:
        return mistral_sdk_error(self.id, exc)
