"""The Gemini text generator: ``models.generate_content`` through the official client."""

from __future__ import annotations

from google.genai import types
from memwell.plugin import ProviderContext, ProviderError, RemoteEndpoint
from memwell.plugin_sdk import TEXTGEN_WHAT, RemoteTextGenerator, RetryPolicy

from .provider import DEFAULT_API_VERSION, gemini_client, gemini_sdk_error


class GeminiTextGenerator(RemoteTextGenerator):
    """``:generateContent`` (``gemini-*`` models) with an optional system instruction."""

    id = "gemini"
    model_prefixes = ("models/", "gemini/", "google/")
    default_base_url = f"https://generativelanguage.googleapis.com/{DEFAULT_API_VERSION}"

    def __init__(
        self, ctx: ProviderContext, endpoint: RemoteEndpoint, *, retry: RetryPolicy | None = None
    ) -> None:
        super().__init__(ctx, endpoint, retry=retry)
        # Keep the client referenced: a collected client closes its HTTP session.
        self.client, self.base_url = gemini_client(endpoint, self.base_url)

    def _complete(self, prompt: str, *, max_tokens: int, system: str | None) -> str | None:
        response = self.client.models.generate_content(
            model=self.model,
            contents=prompt,
            config=types.GenerateContentConfig(
                system_instruction=system or None, max_output_tokens=max_tokens
            ),
        )
        return response.text

    def _sdk_error(self, exc: Exception) -> ProviderError | None:
        return gemini_sdk_error(self.id, exc, what=TEXTGEN_WHAT)
