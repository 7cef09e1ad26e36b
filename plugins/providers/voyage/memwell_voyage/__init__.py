"""Voyage AI embedding provider for memwell (provider id ``voyage``)."""

from __future__ import annotations

__version__ = "0.1.0"
