"""Registers the ``voyage`` embedding provider and reranker; the SDK is imported only when
one is created."""

from __future__ import annotations

from collections.abc import Iterator

from memwell.plugin import (
    EmbeddingProvider,
    EmbeddingProviderSpec,
    ProviderContext,
    RemoteEndpoint,
    Reranker,
    RerankerSpec,
    hookimpl,
    remote_provider_spec,
)
from memwell.plugin_sdk import RemoteProviderConfig, endpoint_create

MEMWELL_PLUGIN_API = ">=1.0,<2"
"""The memwell plugin API versions this plugin supports."""

KEY_ENV = ("VOYAGE_API_KEY",)


def _build(ctx: ProviderContext, endpoint: RemoteEndpoint) -> EmbeddingProvider:
    from .provider import VoyageEmbeddingProvider

    return VoyageEmbeddingProvider(ctx, endpoint)


@hookimpl
def memwell_embedding_providers() -> Iterator[EmbeddingProviderSpec]:
    yield remote_provider_spec(
        id="voyage",
        default_model="voyage-3.5",
        auto_priority=40,
        key_env=KEY_ENV,
        build=_build,
        description="Voyage AI embeddings (voyage-3.5 and family), with the Batch API",
    )


def _build_reranker(ctx: ProviderContext, endpoint: RemoteEndpoint) -> Reranker:
    from .rerank import VoyageReranker

    return VoyageReranker(ctx.model, endpoint)


@hookimpl
def memwell_rerankers() -> Iterator[RerankerSpec]:
    yield RerankerSpec(
        id="voyage",
        create=endpoint_create("voyage", KEY_ENV, _build_reranker),
        default_model="rerank-2.5-lite",
        transport="remote",
        config_model=RemoteProviderConfig,
        key_env=KEY_ENV,
        description="Voyage AI rerank API (rerank-2.5, rerank-2.5-lite)",
    )
