"""Test kit for plugin authors: conformance suites and a deterministic offline provider.

Subclass :class:`~memwell.testing.conformance.BackendConformance` or
:class:`~memwell.testing.conformance.ProviderConformance` in your own test suite and supply one
fixture (:func:`~memwell.testing.factories.backend_factory` builds a backend's managers as
``open_memory`` would); see those classes for details.
"""

from __future__ import annotations

from memwell.testing.factories import backend_factory, isolated_registry
from memwell.testing.fakes import HashEmbeddingProvider, hash_provider_plugin

__all__ = ["HashEmbeddingProvider", "backend_factory", "hash_provider_plugin", "isolated_registry"]
