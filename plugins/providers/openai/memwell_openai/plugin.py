"""Registers the ``openai`` embedding provider and text generator; SDKs load on creation."""

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
    from .provider import OpenAIEmbeddingProvider

    return OpenAIEmbeddingProvider(ctx, endpoint)


def _build_textgen(ctx: ProviderContext, endpoint: RemoteEndpoint) -> TextGenerator:
    from .textgen import OpenAITextGenerator

    return OpenAITextGenerator(ctx, endpoint)


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


@hookimpl
def memwell_text_generators() -> Iterator[TextGeneratorSpec]:
    yield remote_text_generator_spec(
        id="openai",
        default_model="gpt-4o-mini",
        auto_priority=20,
        key_env=("OPENAI_API_KEY",),
        build=_build_textgen,
        description="OpenAI chat completions (gpt-*) for slugs and summaries",
    )
