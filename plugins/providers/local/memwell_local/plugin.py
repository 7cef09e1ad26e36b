"""memwell plugin registration for the ``local`` embedding provider."""

from __future__ import annotations

from collections.abc import Iterator
from typing import cast

from memwell.plugin import (
    EmbeddingProvider,
    EmbeddingProviderSpec,
    ProviderContext,
    RerankerSpec,
    hookimpl,
)

from . import late_interaction
from .cross_encoder import DEFAULT_RERANK_MODEL, RERANKER_ID, CrossEncoderConfig, create_reranker
from .provider import DEFAULT_MODEL, PROVIDER_ID, LocalConfig, create_provider, diagnostics

MEMWELL_PLUGIN_API = ">=1.0,<2"
"""The memwell plugin API versions this plugin supports."""


def create(ctx: ProviderContext) -> EmbeddingProvider:
    """Build the ``local`` provider (see :func:`memwell_local.provider.create_provider`)."""
    # ``dims`` and ``max_input_tokens`` are lazy read-only properties; the protocol declares
    # them as plain attributes, which mypy treats as settable.
    return cast("EmbeddingProvider", create_provider(ctx))


@hookimpl
def memwell_embedding_providers() -> Iterator[EmbeddingProviderSpec]:
    yield EmbeddingProviderSpec(
        id=PROVIDER_ID,
        create=create,
        default_model=DEFAULT_MODEL,
        transport="local",
        auto_priority=10,
        config_model=LocalConfig,
        description="Offline sentence-transformers embeddings (all-MiniLM-L6-v2 bundled)",
        diagnostics=diagnostics,
    )


@hookimpl
def memwell_rerankers() -> Iterator[RerankerSpec]:
    yield RerankerSpec(
        id=RERANKER_ID,
        create=create_reranker,
        default_model=DEFAULT_RERANK_MODEL,
        transport="local",
        config_model=CrossEncoderConfig,
        description="Offline sentence-transformers cross-encoder (needs the torch extra)",
    )
    yield RerankerSpec(
        id=late_interaction.RERANKER_ID,
        create=late_interaction.create_reranker,
        default_model=late_interaction.DEFAULT_LATE_MODEL,
        transport="local",
        config_model=late_interaction.LateInteractionConfig,
        description="MaxSim over the bundled MiniLM's token vectors (no new weights; slow)",
    )
