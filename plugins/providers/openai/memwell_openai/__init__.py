"""OpenAI embedding provider for memwell (provider id ``openai``)."""

from __future__ import annotations

__version__ = "0.1.0"
