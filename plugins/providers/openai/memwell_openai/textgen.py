"""The OpenAI text generator: ``POST {base}/chat/completions`` through the official client."""

from __future__ import annotations

from memwell.plugin import ProviderContext, ProviderError, RemoteEndpoint
from memwell.plugin_sdk import TEXTGEN_WHAT, RemoteTextGenerator, RetryPolicy
from openai.types.chat import ChatCompletionMessageParam

from .provider import openai_client, openai_sdk_error


class OpenAITextGenerator(RemoteTextGenerator):
    """Chat completions (``gpt-*`` models) with an optional system message."""

    id = "openai"
    model_prefixes = ("openai/",)
    default_base_url = "https://api.openai.com/v1"

    def __init__(
        self, ctx: ProviderContext, endpoint: RemoteEndpoint, *, retry: RetryPolicy | None = None
    ) -> None:
        super().__init__(ctx, endpoint, retry=retry)
        self.client = openai_client(endpoint, self.base_url)

    def _complete(self, prompt: str, *, max_tokens: int, system: str | None) -> str | None:
        messages: list[ChatCompletionMessageParam] = []
        if system:
            messages.append({"role": "system", "content": system})
        messages.append({"role": "user", "content": prompt})
        response = self.client.chat.completions.create(
            model=self.model, messages=messages, max_completion_tokens=max_tokens
        )
        return response.choices[0].message.content if response.choices else None

    def _sdk_error(self, exc: Exception) -> ProviderError | None:
        return openai_sdk_error(self.id, exc, what=TEXTGEN_WHAT)
