"""Google Gemini embedding provider for memwell (provider id ``gemini``)."""

from __future__ import annotations

__version__ = "0.1.0"
