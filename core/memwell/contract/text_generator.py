"""The contract a text-generation plugin's ``create`` returns."""

from __future__ import annotations

from typing import Protocol, runtime_checkable


@runtime_checkable
class TextGenerator(Protocol):
    """Turns a prompt into text: slugs, summaries, compaction.

    ``generate`` returns the stripped answer (empty only for an empty prompt), or raises
    :class:`~memwell.contract.errors.ProviderError` (``retryable`` for rate limits, 5xx and
    timeouts).
    """

    @property
    def id(self) -> str:
        """Generator id, e.g. ``"openai"``."""
        ...

    @property
    def model(self) -> str:
        """Model name as sent to the provider."""
        ...

    def generate(self, prompt: str, *, max_tokens: int, system: str | None = None) -> str:
        """Answer ``prompt`` in at most about ``max_tokens`` tokens, following ``system``."""
        ...
