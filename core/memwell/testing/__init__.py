"""Test kit for plugin authors: conformance suites and a deterministic offline provider.

Subclass :class:`~memwell.testing.conformance.BackendConformance` or
:class:`~memwell.testing.conformance.ProviderConformance` in your own test suite and supply one
fixture; see those classes for details.
"""

from __future__ import annotations

from .fakes import HashEmbeddingProvider, hash_provider_plugin

__all__ = ["HashEmbeddingProvider", "hash_provider_plugin"]
