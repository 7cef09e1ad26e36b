"""Registers the ``voyage`` embedding provider; the SDK is imported only when it is created."""

from __future__ import annotations

from collections.abc import Iterator

from memwell.descriptors import EmbeddingProviderSpec, ProviderContext
from memwell.embeddings import EmbeddingProvider
from memwell.hookspecs import hookimpl
from memwell.remote import RemoteEndpoint, remote_provider_spec


def _build(ctx: ProviderContext, endpoint: RemoteEndpoint) -> EmbeddingProvider:
    from .provider import VoyageEmbeddingProvider

    return VoyageEmbeddingProvider(ctx, endpoint)


@hookimpl
def memwell_embedding_providers() -> Iterator[EmbeddingProviderSpec]:
    yield remote_provider_spec(
        id="voyage",
        default_model="voyage-3.5",
        auto_priority=40,
        key_env=("VOYAGE_API_KEY",),
        build=_build,
        description="Voyage AI embeddings (voyage-3.5 and family), with the Batch API",
    )
