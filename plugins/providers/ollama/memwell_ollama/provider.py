"""The Ollama embeddings client (official ``ollama`` package).

``POST /api/embed`` takes a batch; servers older than Ollama 0.3.4 lack it (HTTP 404), and then
``POST /api/embeddings`` is used, one request per text (the reference's plugin contract).
"""

from __future__ import annotations

from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor

import httpx
from memwell.plugin import (
    ProviderContext,
    ProviderError,
    ProviderUnavailableError,
    RemoteEmbeddingProvider,
    RemoteEndpoint,
)
from memwell.plugin_sdk import merge_headers, status_error, transport_error
from ollama import Client, RequestError, ResponseError

from .config import OllamaConfig, resolve_host

#: Parallel requests against an old server's one-text endpoint.
LEGACY_CONCURRENCY = 4


class OllamaEmbeddingProvider(RemoteEmbeddingProvider):
    """Embeddings from an Ollama server; the SDK does not retry (the core does)."""

    id = "ollama"
    model_prefixes = ("ollama/",)

    def __init__(self, ctx: ProviderContext, config: OllamaConfig) -> None:
        headers = merge_headers(ctx.settings.remote.headers, config.headers)
        if config.api_key:
            headers = merge_headers(headers, {"Authorization": f"Bearer {config.api_key}"})
        endpoint = RemoteEndpoint(
            api_key=config.api_key or "",
            base_url=resolve_host(config),
            headers=headers,
            timeout_seconds=ctx.settings.remote.timeout_seconds,
        )
        super().__init__(ctx, endpoint)
        self.config = config
        self.legacy = False
        self.client = Client(
            host=self.base_url, timeout=endpoint.timeout_seconds, headers=headers or None
        )

    def probe(self) -> None:
        """Check within ``probe_timeout_seconds`` that the server answers.

        :raises ProviderUnavailableError: it does not (so ``auto`` moves on).
        """
        quick = Client(
            host=self.base_url,
            timeout=self.config.probe_timeout_seconds,
            headers=self.endpoint.headers or None,
        )
        try:
            quick.list()
        except (ResponseError, RequestError, httpx.HTTPError, ConnectionError, OSError) as exc:
            raise ProviderUnavailableError(
                f"Ollama server not reachable at {self.base_url}: {exc} "
                "(start `ollama serve`, or set OLLAMA_HOST or providers.ollama.base_url)",
                provider=self.id,
            ) from exc

    def _request(self, texts: list[str], *, query: bool) -> Sequence[Sequence[float] | None]:
        if not self.legacy:
            try:
                return list(self.client.embed(model=self.model, input=texts).embeddings)
            except ResponseError as exc:
                if exc.status_code != 404 or "model" in str(exc.error).lower():
                    raise
                self.legacy = True  # an old server: no /api/embed
        with ThreadPoolExecutor(max_workers=min(LEGACY_CONCURRENCY, len(texts))) as pool:
            return list(pool.map(self._legacy_one, texts))

    def _legacy_one(self, text: str) -> Sequence[float]:
        return list(self.client.embeddings(model=self.model, prompt=text).embedding or ())

    def _sdk_error(self, exc: Exception) -> ProviderError | None:
        if isinstance(exc, ResponseError):
            return status_error(self.id, exc.status_code, exc.error)
        if isinstance(exc, (httpx.TransportError, ConnectionError)):
            return transport_error(self.id, exc)
        return None
