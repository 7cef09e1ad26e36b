"""Registers the ``mistral`` embedding provider; the SDK is imported only when it is created."""

from __future__ import annotations

from collections.abc import Iterator

from memwell.descriptors import EmbeddingProviderSpec, ProviderContext
from memwell.embeddings import EmbeddingProvider
from memwell.hookspecs import hookimpl
from memwell.remote import RemoteEndpoint, remote_provider_spec


def _build(ctx: ProviderContext, endpoint: RemoteEndpoint) -> EmbeddingProvider:
    from .provider import MistralEmbeddingProvider

    return MistralEmbeddingProvider(ctx, endpoint)


@hookimpl
def memwell_embedding_providers() -> Iterator[EmbeddingProviderSpec]:
    yield remote_provider_spec(
        id="mistral",
        default_model="mistral-embed",
        auto_priority=50,
        key_env=("MISTRAL_API_KEY",),
        build=_build,
        description="Mistral embeddings API (mistral-embed)",
    )
