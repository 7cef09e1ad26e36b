"""Registers the ``ollama`` embedding provider; the SDK is imported only when it is created.

``auto`` tries it last (after ``local`` and every provider with an API key), and only a server
that answers a quick probe is selected, so an absent Ollama never delays or breaks selection.
"""

from __future__ import annotations

from collections.abc import Iterator

from memwell.plugin import EmbeddingProvider, EmbeddingProviderSpec, ProviderContext, hookimpl

from .config import OllamaConfig

MEMWELL_PLUGIN_API = ">=1.0,<2"
"""The memwell plugin API versions this plugin supports."""

DEFAULT_MODEL = "nomic-embed-text"
AUTO_PRIORITY = 60


def create(ctx: ProviderContext) -> EmbeddingProvider:
    """Build the provider and probe the server (:class:`ProviderUnavailableError` if down)."""
    from .provider import OllamaEmbeddingProvider

    config = ctx.plugin_config if isinstance(ctx.plugin_config, OllamaConfig) else OllamaConfig()
    provider = OllamaEmbeddingProvider(ctx, config)
    provider.probe()
    return provider


@hookimpl
def memwell_embedding_providers() -> Iterator[EmbeddingProviderSpec]:
    yield EmbeddingProviderSpec(
        id="ollama",
        create=create,
        default_model=DEFAULT_MODEL,
        transport="remote",
        auto_priority=AUTO_PRIORITY,
        config_model=OllamaConfig,
        description="Ollama server embeddings (/api/embed; nomic-embed-text)",
    )
