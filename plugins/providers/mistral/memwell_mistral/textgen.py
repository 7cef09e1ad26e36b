"""The Mistral text generator: ``chat.complete`` through the official client."""

from __future__ import annotations

from memwell.plugin import ProviderContext, ProviderError, RemoteEndpoint
from memwell.plugin_sdk import TEXTGEN_WHAT, RemoteTextGenerator, RetryPolicy
from mistralai.client.models import ChatCompletionRequestMessageTypedDict

from .provider import mistral_client, mistral_sdk_error


class MistralTextGenerator(RemoteTextGenerator):
    """Chat completions (``mistral-*`` models) with an optional system message."""

    id = "mistral"
    model_prefixes = ("mistral/",)
    default_base_url = "https://api.mistral.ai/v1"

    def __init__(
        self, ctx: ProviderContext, endpoint: RemoteEndpoint, *, retry: RetryPolicy | None = None
    ) -> None:
        super().__init__(ctx, endpoint, retry=retry)
        self.client = mistral_client(endpoint, self.base_url)

    def _complete(self, prompt: str, *, max_tokens: int, system: str | None) -> str | None:
        messages: list[ChatCompletionRequestMessageTypedDict] = []
        if system:
            messages.append({"role": "system", "content": system})
        messages.append({"role": "user", "content": prompt})
        response = self.client.chat.complete(
            model=self.model,
            messages=messages,
            max_tokens=max_tokens,
            http_headers=self.endpoint.headers or None,
        )
        message = response.choices[0].message if response.choices else None
        content = message.content if message is not None else None
        if isinstance(content, str):
            return content
        if isinstance(content, list):  # content chunks: keep the text ones
            return "".join(getattr(chunk, "text", "") for chunk in content)
        return None

    def _sdk_error(self, exc: Exception) -> ProviderError | None:
        return mistral_sdk_error(self.id, exc, what=TEXTGEN_WHAT)
