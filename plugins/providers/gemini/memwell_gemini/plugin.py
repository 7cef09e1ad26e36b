"""Registers the ``gemini`` embedding provider; the SDK is imported only when it is created."""

from __future__ import annotations

from collections.abc import Iterator

from memwell.descriptors import EmbeddingProviderSpec, ProviderContext
from memwell.embeddings import EmbeddingProvider
from memwell.hookspecs import hookimpl
from memwell.remote import RemoteEndpoint, remote_provider_spec


def _build(ctx: ProviderContext, endpoint: RemoteEndpoint) -> EmbeddingProvider:
    from .provider import GeminiEmbeddingProvider

    return GeminiEmbeddingProvider(ctx, endpoint)


@hookimpl
def memwell_embedding_providers() -> Iterator[EmbeddingProviderSpec]:
    yield remote_provider_spec(
        id="gemini",
        default_model="gemini-embedding-001",
        auto_priority=30,
        key_env=("GEMINI_API_KEY", "GOOGLE_API_KEY"),
        build=_build,
        description="Google Gemini embeddings (gemini-embedding-*), with the Batch API",
    )
