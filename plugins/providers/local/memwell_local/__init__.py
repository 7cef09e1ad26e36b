"""memwell ``local`` embedding provider: sentence-transformers models, loaded offline.

Importing this package is cheap; torch and sentence-transformers load with the first embedding.
"""

from __future__ import annotations

from .provider import LocalConfig, SentenceTransformerProvider, create_provider

__all__ = ["LocalConfig", "SentenceTransformerProvider", "create_provider"]
