"""Registers the ``gemini`` embedding provider and text generator; SDKs load on creation."""

from __future__ import annotations

from collections.abc import Iterator

from memwell.plugin import (
    EmbeddingProvider,
    EmbeddingProviderSpec,
    ProviderContext,
    RemoteEndpoint,
    TextGenerator,
    TextGeneratorSpec,
    hookimpl,
    remote_provider_spec,
)
from memwell.plugin_sdk import remote_text_generator_spec

MEMWELL_PLUGIN_API = ">=1.0,<2"
"""The memwell plugin API versions this plugin supports."""


def _build(ctx: ProviderContext, endpoint: RemoteEndpoint) -> EmbeddingProvider:
    from .provider import GeminiEmbeddingProvider

    return GeminiEmbeddingProvider(ctx, endpoint)


def _build_textgen(ctx: ProviderContext, endpoint: RemoteEndpoint) -> TextGenerator:
    from .textgen import GeminiTextGenerator

    return GeminiTextGenerator(ctx, endpoint)


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


@hookimpl
def memwell_text_generators() -> Iterator[TextGeneratorSpec]:
    yield remote_text_generator_spec(
        id="gemini",
        default_model="gemini-2.5-flash",
        auto_priority=30,
        key_env=("GEMINI_API_KEY", "GOOGLE_API_KEY"),
        build=_build_textgen,
        description="Google Gemini generateContent (gemini-*) for slugs and summaries",
    )
