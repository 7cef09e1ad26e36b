"""Shared machinery for remote (HTTP API) text generators.

The OpenAI, Gemini and Mistral plugins build on this module. A generator uses the same key,
base URL and headers as the plugin's embedding provider (``[providers.<id>]``, then
``[remote]``, then the provider's environment variables; see :func:`memwell.providers.remote.
resolve_endpoint`), so one key configures both. SDK errors become
:class:`~memwell.contract.errors.ProviderError` with the right ``retryable`` flag, and the core
:class:`~memwell.providers.retry.RetryPolicy` retries rate limits, 5xx and timeouts; SDKs never
retry.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable

from memwell.contract.descriptors import ProviderContext, TextGeneratorSpec
from memwell.contract.embeddings import strip_model_prefix
from memwell.contract.errors import InvalidArgumentError, ProviderError
from memwell.contract.text_generator import TextGenerator
from memwell.providers.remote import (
    RemoteEndpoint,
    RemoteProviderConfig,
    endpoint_create,
    map_sdk_exception,
    response_error,
)
from memwell.providers.retry import RetryPolicy

#: How remote generators name their requests in error messages.
WHAT = "text generation"


class RemoteTextGenerator(ABC):
    """Base class of the remote generators.

    Subclasses set ``id``, ``model_prefixes`` and ``default_base_url``, and implement
    :meth:`_complete` (one SDK call) and :meth:`_sdk_error` (SDK exception to
    :class:`ProviderError`, or ``None`` for the generic mapping).
    """

    id: str
    model_prefixes: tuple[str, ...] = ()
    default_base_url: str = ""

    def __init__(
        self, ctx: ProviderContext, endpoint: RemoteEndpoint, *, retry: RetryPolicy | None = None
    ) -> None:
        self.endpoint = endpoint
        self.model = strip_model_prefix(ctx.model.strip(), self.model_prefixes)
        self.base_url = (endpoint.base_url or self.default_base_url).rstrip("/")
        self.retry = retry or RetryPolicy()

    @abstractmethod
    def _complete(self, prompt: str, *, max_tokens: int, system: str | None) -> str | None:
        """One SDK call; returns the answer's text (``None`` if the response has none)."""

    @abstractmethod
    def _sdk_error(self, exc: Exception) -> ProviderError | None:
        """Map an SDK exception; ``None`` leaves it to the generic mapping."""

    def generate(self, prompt: str, *, max_tokens: int, system: str | None = None) -> str:
        """The model's stripped answer to ``prompt``; retried on transient failures.

        :raises ValueError: ``max_tokens`` below 1.
        :raises ProviderError: the request failed, or the model returned no text.
        """
        if max_tokens < 1:
            raise InvalidArgumentError(f"max_tokens must be at least 1, got {max_tokens}")
        return self.retry.call(lambda: self._attempt(prompt, max_tokens, system), provider=self.id)

    def _attempt(self, prompt: str, max_tokens: int, system: str | None) -> str:
        try:
            text = self._complete(prompt, max_tokens=max_tokens, system=system)
        except Exception as exc:
            raise map_sdk_exception(self.id, exc, self._sdk_error, what=WHAT) from exc
        if not text or not text.strip():
            raise response_error(self.id, "the model returned no text", what=WHAT)
        return text.strip()


def remote_text_generator_spec(
    *,
    id: str,
    default_model: str,
    auto_priority: int,
    key_env: tuple[str, ...],
    build: Callable[[ProviderContext, RemoteEndpoint], TextGenerator],
    description: str,
) -> TextGeneratorSpec:
    """A :class:`TextGeneratorSpec` whose ``create`` resolves the endpoint first.

    A missing key fails with :class:`~memwell.contract.errors.ProviderUnavailableError` before
    ``build`` runs, so ``auto`` selection never picks (or imports the SDK of) a remote
    generator without its key.
    """
    return TextGeneratorSpec(
        id=id,
        create=endpoint_create(id, key_env, build),
        default_model=default_model,
        transport="remote",
        auto_priority=auto_priority,
        config_model=RemoteProviderConfig,
        key_env=key_env,
        description=description,
    )
