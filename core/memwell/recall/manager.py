""":class:`RecallCachedManager`: the recall cache between callers and a backend manager.

``open_memory`` puts it around every manager, so the agent tools, the CLI, the MCP server and
the Python API all go through it. A search is answered by the first tier that has it:

1. exact: the same normalised query and options, cached less than an hour ago;
2. semantic: a cached query whose embedding has cosine >= 0.85 with this one (24 h);
3. temporal, for a question about recent events ("what happened yesterday?"): a cached
   recent-events question with cosine >= 0.7 (7 days);
4. the backend, whose answer is then cached.

Entries belong to the backend's content version (:func:`~memwell.recall.protocols.content_version`),
so a sync or write that changed the index is never hidden. A backend without a content version
is not cached, and one without a query embedder gets no semantic tier; ``status()`` says so.
"""

from __future__ import annotations

import json
import time
import unicodedata
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ..config import MemwellSettings
from ..fallback import FallbackMemoryManager
from ..lazy_import import lazy_logger
from ..manager import BatchSearchMixin, DelegatingManager, MemorySearchManager
from ..models import (
    MemorySearchResult,
    MemoryStatus,
    ReadFileResult,
    RecallCacheStatus,
)
from ..retrieval.boolean import parse_boolean
from ..retrieval.date_match import asks_recent
from ..retrieval.parsed_query import ParsedQuery
from ..retrieval.snippets import citations_enabled
from . import protocols
from .store import Clock, RecallStore

if TYPE_CHECKING:
    from ..curation.tracking import RecallTracker
    from ..embeddings import Vector

log = lazy_logger(__name__)

NO_VERSION = "the backend reports no content version, so its answers are not cached"
NO_EMBEDDER = "the backend has no query embedder (keyword-only mode or out-of-process embedding)"


def normalise_query(query: str) -> str:
    """The exact tier's key text: Unicode NFKC, whitespace runs collapsed, ends stripped."""
    return " ".join(unicodedata.normalize("NFKC", query).split())


class RecallCachedManager(BatchSearchMixin, DelegatingManager):
    """Serve ``inner`` through a :class:`~memwell.recall.store.RecallStore`.

    Attributes the wrapper does not define are read from ``inner``, so backend-specific
    attributes stay reachable; :func:`unwrap` gives the backend manager itself. With a
    ``tracker``, every answer (cached or not) and every read is recorded
    (:mod:`memwell.curation.tracking`).
    """

    def __init__(
        self,
        inner: MemorySearchManager,
        settings: MemwellSettings,
        *,
        clock: Clock = time.monotonic,
        tracker: RecallTracker | None = None,
    ) -> None:
        super().__init__(inner)
        self.tracker = tracker
        self.settings = settings
        self.config = settings.cache.recall
        self.store = RecallStore(self.config, clock)
        self.backend_searches = 0
        self._sessions: set[str] = set()
        self._off_reason: str | None = None
        self._semantic_off: str | None = None
        self.warmed_ms: float | None = None

    # -- keys -------------------------------------------------------------------------------

    def _version(self) -> str | None:
        try:
            version = protocols.content_version(self._inner)
        except Exception as exc:
            log.debug("content_version raised %s; not caching", exc)
            version = None
        self._off_reason = None if version is not None else NO_VERSION
        return version

    def _options(
        self,
        max_results: int | None,
        min_score: float | None,
        session_key: str | None,
        sources: Sequence[str] | None,
    ) -> str:
        cite = citations_enabled(self.settings.citations, session_key)
        shown = sorted(set(sources)) if sources is not None else None
        return json.dumps([max_results, min_score, shown, cite])

    def _embedder(self) -> protocols.QueryEmbedder | None:
        if not self.config.semantic:
            self._semantic_off = "cache.recall.semantic is false"
            return None
        embedder = protocols.query_embedder(self._inner)
        self._semantic_off = None if embedder is not None else NO_EMBEDDER
        return embedder

    def _vectors(self, texts: Sequence[str]) -> tuple[str, list[Vector | None]]:
        """The query embedder's space and each text's vector (``None`` where unavailable)."""
        embedder = self._embedder()
        if embedder is None:
            return "", [None] * len(texts)
        try:
            space = embedder.space
            if len(texts) == 1:
                return space, [embedder.embed(texts[0])]
            return space, list(embedder.embed_many(texts))
        except Exception as exc:  # the backend's own search reports provider failures
            log.debug("query embedding for the recall cache failed: %s", exc)
            return "", [None] * len(texts)

    # -- search -----------------------------------------------------------------------------

    def search_many(
        self,
        queries: Sequence[str],
        *,
        max_results: int | None = None,
        min_score: float | None = None,
        session_key: str | None = None,
        sources: Sequence[str] | None = None,
    ) -> list[list[MemorySearchResult]]:
        """Answer each query, in order; the backend answers the cache's misses in one batch.

        Each query is cut to ``query.max_chars`` first, into the
        :class:`~memwell.retrieval.parsed_query.ParsedQuery` that travels down to the backend
        (which does not cut it again), so a pasted document is never normalised or embedded
        whole for the cache's keys.
        """
        self.open_session(session_key)
        max_chars = self.settings.query.max_chars
        queries = [ParsedQuery.bound(q, max_chars) for q in queries]
        kwargs: dict[str, Any] = {
            "max_results": max_results,
            "min_score": min_score,
            "session_key": session_key,
            "sources": sources,
        }
        version = self._version() if self.config.enabled else None
        if version is None:
            return self._tracked(queries, self._backend(list(queries), kwargs))
        options = self._options(max_results, min_score, session_key, sources)
        answers: list[list[MemorySearchResult] | None] = [
            self.store.exact(version, options, normalise_query(q)) if q.strip() else []
            for q in queries
        ]
        pending = [i for i, a in enumerate(answers) if a is None]
        space, vectors = self._vectors([queries[i].strip() for i in pending])
        missing: list[tuple[int, Vector | None]] = []
        temporal = self.config.temporal
        for index, vector in zip(pending, vectors, strict=True):
            if parse_boolean(queries[index]):
                # a query with +/- terms answers, and is answered by, only itself: a similar
                # query may have other terms (or none)
                vector = None
            if vector is not None:
                answers[index] = self.store.semantic(version, options, space, vector)
                if answers[index] is None and temporal and asks_recent(queries[index]):
                    answers[index] = self.store.temporal(version, options, space, vector)
            if answers[index] is None:
                missing.append((index, vector))
        if missing:
            found = self._backend([queries[i] for i, _ in missing], kwargs)
            unchanged = self._version() == version  # e.g. a bootstrap sync ran meanwhile
            for (index, vector), results in zip(missing, found, strict=True):
                answers[index] = results
                if unchanged:
                    text = normalise_query(queries[index])
                    recent = asks_recent(text)
                    self.store.put(
                        version, options, text, results, space=space, vector=vector, recent=recent
                    )
        return self._tracked(queries, [list(a) if a is not None else [] for a in answers])

    def _tracked(
        self, queries: Sequence[str], answers: list[list[MemorySearchResult]]
    ) -> list[list[MemorySearchResult]]:
        """Record every answer, cached or not, with the tracker (if any)."""
        if self.tracker is not None:
            self.tracker.record_searches(zip(queries, answers, strict=True))
        return answers

    def _backend(
        self, queries: list[str], kwargs: dict[str, Any]
    ) -> list[list[MemorySearchResult]]:
        self.backend_searches += len(queries)
        return protocols.search_many(self._inner, queries, **kwargs)

    # -- sessions and warm-up ---------------------------------------------------------------

    def open_session(self, session_key: str | None) -> None:
        """Warm up (:meth:`warm`) the first time ``session_key`` is seen."""
        if session_key is None or session_key in self._sessions:
            return
        self._sessions.add(session_key)
        self.warm()

    def warm(self) -> float:
        """Load the index, the embedding model and the caches now; returns the milliseconds.

        Failures are logged, never raised: the first search reports them as usual.
        """
        started = time.perf_counter()
        try:
            protocols.warm(self._inner)
            self._version()
            self._embedder()
        except Exception as exc:
            log.warning("memwell warm-up failed: %s: %s", type(exc).__name__, exc)
        self.warmed_ms = (time.perf_counter() - started) * 1000
        return self.warmed_ms

    # -- everything else passes through -----------------------------------------------------

    def cache_status(self) -> RecallCacheStatus:
        """The cache's counters and bounds (also in ``status().recall_cache``)."""
        store = self.store
        reason = None if self.config.enabled else "cache.recall.enabled is false"
        reason = reason or self._off_reason
        semantic_off = (
            self._semantic_off if self.config.semantic else "cache.recall.semantic is false"
        )
        return RecallCacheStatus(
            enabled=reason is None,
            reason=reason,
            entries=store.entries,
            bytes=store.bytes,
            max_entries=self.config.max_entries,
            max_bytes=self.config.max_bytes,
            evictions=store.evictions,
            invalidations=store.invalidations,
            exact=store.exact_stats.model_copy(),
            semantic=store.semantic_stats.model_copy() if semantic_off is None else None,
            semantic_off=semantic_off,
            temporal=(
                store.temporal_stats.model_copy()
                if semantic_off is None and self.config.temporal
                else None
            ),
            backend_searches=self.backend_searches,
        )

    def status(self) -> MemoryStatus:
        if self.config.enabled:
            self._version()
            self._embedder()
        update: dict[str, Any] = {"recall_cache": self.cache_status()}
        if self.tracker is not None:
            update["recall_tracking"] = self.tracker.status()
        return self._inner.status().model_copy(update=update)

    def read_file(
        self, rel_path: str, *, from_line: int | None = None, lines: int | None = None
    ) -> ReadFileResult:
        result = self._inner.read_file(rel_path, from_line=from_line, lines=lines)
        if self.tracker is not None:
            self.tracker.record_read(result, from_line, lines)
        return result

    def close(self) -> None:
        self._inner.close()
        if self.tracker is not None:
            self.tracker.close()


def unwrap(manager: object) -> object:
    """The backend manager serving calls behind ``open_memory``'s layers: the recall cache, the
    rerank stage and the :class:`~memwell.fallback.FallbackMemoryManager` (its active manager,
    ``None`` before a fallback is built). Anything else is returned as it is.

    Example::

        if isinstance(unwrap(manager), JsonFileManager): ...
    """
    while True:
        if isinstance(manager, DelegatingManager):
            manager = manager.inner
        elif isinstance(manager, FallbackMemoryManager):
            manager = manager.active
        else:
            return manager
