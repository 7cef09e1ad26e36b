"""The optional reranking stage: a second, slower scorer over the backend's best hits.

``[rerank] provider`` names a reranker from the ``memwell_rerankers`` hook (``"none"``, the
default, turns the stage off). :class:`RerankingManager` asks the backend for
``[rerank] candidates`` hits without a floor, lets the reranker score each (query, chunk text)
pair in [0, 1], and returns the hits in the order of their new scores, floored by
``min_score`` and cut to ``max_results``. A hit's new score is ``weight`` times the
reranker's plus ``1 - weight`` times the backend's (``[rerank] weight``; 1, the default, is
the reranker's alone). Below 1 the backend's own floor (its coverage-weighed evidence) picks
the candidates and the reranker only reorders them. A reranker that fails is logged and the
backend's own ranking is served, with a warning on stderr and the reason in
:attr:`RerankingManager.last_error`.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import msgspec

from memwell.contract.config import MemwellSettings, plugin_config
from memwell.contract.descriptors import ProviderContext, RerankerSpec
from memwell.contract.descriptors import Reranker as Reranker
from memwell.contract.errors import ConfigError
from memwell.contract.manager import DelegatingManager, MemorySearchManager, search_batch
from memwell.contract.models import MemorySearchResult
from memwell.contract.search_options import SearchOptions
from memwell.registry.plugins import PluginRegistry
from memwell.util.lazy_import import lazy_logger

log = lazy_logger(__name__)


def open_reranker(settings: MemwellSettings, registry: PluginRegistry, workspace: Path) -> Reranker:
    """Build the reranker ``[rerank] provider`` names; a clear error when it is unknown."""
    name = settings.rerank.provider
    spec: RerankerSpec | None = registry.lookup("reranker", name)
    if spec is None:
        known = ", ".join(registry.installed("reranker")) or "none installed"
        raise ConfigError(f"rerank.provider: unknown reranker {name!r} (known: {known})")
    ctx = ProviderContext(
        workspace=workspace,
        settings=settings,
        model=settings.rerank.model or spec.default_model,
        plugin_config=plugin_config(
            spec.config_model, settings.providers.get(name), f"providers.{name}"
        ),
    )
    return spec.create(ctx)


class RerankingManager(DelegatingManager):
    """``inner``'s hits rescored by ``reranker`` (see the module docstring)."""

    def __init__(
        self, inner: MemorySearchManager, reranker: Reranker, settings: MemwellSettings
    ) -> None:
        super().__init__(inner)
        self.reranker = reranker
        self.settings = settings
        self.last_error: str | None = None

    def search_batch(
        self, queries: Sequence[str], options: SearchOptions
    ) -> list[list[MemorySearchResult]]:
        """Every query's hits reranked: one batch down to the backend for all of them, with
        ``[rerank] candidates`` hits each (without a floor when the reranker's score is all
        that counts); the reranker scores one query's hits at a time."""
        query_settings = self.settings.query
        limit = (
            options.max_results if options.max_results is not None else query_settings.max_results
        )
        floor = options.min_score if options.min_score is not None else query_settings.min_score
        weight = self.settings.rerank.weight
        wider = msgspec.structs.replace(
            options,
            max_results=max(limit, self.settings.rerank.candidates),
            min_score=floor if weight < 1 else 0.0,
        )
        found = search_batch(self._inner, queries, wider)
        return [
            self._rerank(query, hits, limit, floor, weight)
            for query, hits in zip(queries, found, strict=True)
        ]

    def _rerank(
        self, query: str, hits: list[MemorySearchResult], limit: int, floor: float, weight: float
    ) -> list[MemorySearchResult]:
        """``hits`` rescored by the reranker, floored by ``floor`` and cut to ``limit``."""
        if not hits:
            return []
        try:
            scores = self.reranker.rerank(query, [hit.snippet for hit in hits])
            if len(scores) != len(hits):
                raise ValueError(f"{len(scores)} scores for {len(hits)} documents")
        except Exception as exc:
            self.last_error = f"reranker {self.reranker.id} failed: {exc}"
            log.warning("memwell: %s; serving the backend's ranking", self.last_error)
            return [hit for hit in hits if hit.score >= floor][:limit]
        self.last_error = None
        rescored = [
            hit.model_copy(
                update={
                    "score": weight * min(1.0, max(0.0, float(score))) + (1 - weight) * hit.score
                }
            )
            for hit, score in zip(hits, scores, strict=True)
        ]
        rescored.sort(key=lambda hit: hit.score, reverse=True)
        return [hit for hit in rescored if weight < 1 or hit.score >= floor][:limit]
