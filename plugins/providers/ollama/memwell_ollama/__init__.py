"""Ollama embedding provider for memwell (provider id ``ollama``)."""

from __future__ import annotations

__version__ = "0.1.0"
