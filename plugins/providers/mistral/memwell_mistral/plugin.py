"""Registers the ``mistral`` embedding provider and text generator; SDKs load on creation."""

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
    from .provider import MistralEmbeddingProvider

    return MistralEmbeddingProvider(ctx, endpoint)


def _build_textgen(ctx: ProviderContext, endpoint: RemoteEndpoint) -> TextGenerator:
    from .textgen import MistralTextGenerator

    return MistralTextGenerator(ctx, endpoint)


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


@hookimpl
def memwell_text_generators() -> Iterator[TextGeneratorSpec]:
    yield remote_text_generator_spec(
        id="mistral",
        default_model="mistral-small-latest",
        auto_priority=50,
        key_env=("MISTRAL_API_KEY",),
        build=_build_textgen,
        description="Mistral chat completions (mistral-*) for slugs and summaries",
    )
