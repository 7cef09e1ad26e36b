"""Registers the ``openai`` embedding provider; the SDK is imported only when it is created."""

from __future__ import annotations

from collections.abc import Iterator

from memwell.descriptors import EmbeddingProviderSpec, ProviderContext
from memwell.embeddings import EmbeddingProvider
from memwell.hookspecs import hookimpl
from memwell.remote import RemoteEndpoint, remote_provider_spec


def _build(ctx: ProviderContext, endpoint: RemoteEndpoint) -> EmbeddingProvider:
    from .provider import OpenAIEmbeddingProvider

    return OpenAIEmbeddingProvider(ctx, endpoint)


@hookimpl
def memwell_embedding_providers() -> Iterator[EmbeddingProviderSpec]:
    yield remote_provider_spec(
        id="openai",
        default_model="text-embedding-3-small",
        auto_priority=20,
        key_env=("OPENAI_API_KEY",),
        build=_build,
        description="OpenAI embeddings API (text-embedding-3-*), with the Batch API",
    )
