""":class:`RecallCachedManager`: the recall cache between callers and a backend manager.

``open_memory`` puts it around every manager, so the agent tools, the CLI, the MCP server and
the Python API all go through it. A search is answered by the first tier that has it:

1. exact: the same normalised query and options, cached less than an hour ago;
2. semantic: a cached query whose embedding has cosine >= 0.85 with this one (24 h);
3. temporal, for a question about recent events ("what happened yesterday?"): a cached
   recent-events question with cosine >= 0.7 (7 days);
4. the backend, whose answer is then cached.

Entries belong to the backend's content version
(:func:`~memwell.contract.recall_protocols.content_version`), so a sync or write that changed the
index is never hidden. A backend without a content version is not cached, and one without a query
embedder gets no semantic tier; ``status()`` says so.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

from memwell.contract import recall_protocols as protocols
from memwell.contract.config import MemwellSettings
from memwell.contract.errors import MemwellError
from memwell.contract.manager import (
    DelegatingManager,
    MemorySearchManager,
    search_batch,
)
from memwell.contract.models import (
    MemorySearchResult,
    MemoryStatus,
    ReadFileResult,
    RecallCacheStatus,
)
from memwell.contract.search_options import SearchOptions
from memwell.recall.store import Clock, RecallStore, normalise_query
from memwell.recall.warmup import HOURS, WarmUp, check_period, period_of, usual_queries
from memwell.retrieval.boolean import parse_boolean
from memwell.retrieval.date_match import asks_recent
from memwell.retrieval.parsed_query import ParsedQuery
from memwell.retrieval.routing import Route, route_query, set_route
from memwell.retrieval.snippets import citations_enabled
from memwell.util.lazy_import import lazy_logger
from memwell.util.moved_paths import moved_attributes

if TYPE_CHECKING:
    from memwell.contract.embeddings import Vector
    from memwell.curation.tracking import RecallTracker

log = lazy_logger(__name__)

NO_VERSION = "the backend reports no content version, so its answers are not cached"
NO_EMBEDDER = "the backend has no query embedder (keyword-only mode or out-of-process embedding)"
REFRESH_WAIT_SECONDS = 60.0
"""How long :meth:`RecallCachedManager.close` waits for background refreshes."""


def group_similar(keyed: Sequence[tuple[str, Vector | None]], threshold: float) -> list[list[int]]:
    """The positions of ``keyed`` (normalised text, query vector or ``None``) in groups that
    one retrieval answers, each led by its first member, in order of their leaders.

    A query joins the first earlier leader with the same text, or else with a vector of
    cosine at least ``threshold`` (vectors are unit length): what the exact and semantic tiers
    would answer it with had the batch been searched one query at a time.
    """
    groups: list[list[int]] = []
    leader_of: dict[str, int] = {}
    vectors: list[tuple[int, Vector]] = []
    for position, (text, vector) in enumerate(keyed):
        group = leader_of.get(text)
        if group is None and vector is not None:
            group = next(
                (
                    g
                    for g, v in vectors
                    if v.shape == vector.shape and float(v @ vector) >= threshold
                ),
                None,
            )
        if group is None:
            group = len(groups)
            groups.append([])
            leader_of[text] = group
            if vector is not None:
                vectors.append((group, vector))
        groups[group].append(position)
    return groups


class RecallCachedManager(DelegatingManager):
    """Serve ``inner`` through a :class:`~memwell.recall.store.RecallStore`.

    Attributes the wrapper does not define are read from ``inner``, so backend-specific
    attributes stay reachable; :func:`~memwell.runtime.fallback.unwrap` gives the backend manager
    itself. With a ``tracker``, every answer (cached or not) and every read is recorded
    (:mod:`memwell.curation.tracking`).
    """

    def __init__(
        self,
        inner: MemorySearchManager,
        settings: MemwellSettings,
        *,
        clock: Clock = time.monotonic,
        tracker: RecallTracker | None = None,
        router: Callable[[str], Route] | None = None,
    ) -> None:
        super().__init__(inner)
        self.tracker = tracker
        self.router = router
        self.settings = settings
        self.config = settings.cache.recall
        self.store = RecallStore(self.config, clock)
        self.backend_searches = 0
        self.batch_shared = 0
        self.stale_served = 0
        self._refreshing: dict[tuple[str, str], threading.Thread] = {}
        self._refresh_lock = threading.Lock()
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

    def _options_key(self, options: SearchOptions) -> str:
        """The cache key of ``options``: what changes the answer of a query."""
        cite = citations_enabled(self.settings.citations, options.session_key)
        shown = sorted(options.sources) if options.sources is not None else None
        return json.dumps([options.max_results, options.min_score, shown, cite])

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

    def search_batch(
        self, queries: Sequence[str], options: SearchOptions
    ) -> list[list[MemorySearchResult]]:
        """Answer each query, in order; the backend answers the cache's misses in one batch,
        with ``options`` as they are.

        Each query is cut to ``query.max_chars`` first, into the
        :class:`~memwell.retrieval.parsed_query.ParsedQuery` that travels down to the backend
        (which does not cut it again), so a pasted document is never normalised or embedded
        whole for the cache's keys. Misses that are near-duplicates of each other
        (:func:`group_similar`) share one retrieval, as they would share one cache entry
        searched one at a time.
        """
        self.open_session(options.session_key)
        texts = self._bound(queries)
        return self._tracked(texts, self._answer(texts, options, lookup=True))

    def _bound(self, queries: Sequence[str]) -> list[str]:
        """Each query cut once into a :class:`~memwell.retrieval.parsed_query.ParsedQuery`,
        carrying the router's route when there is a router."""
        max_chars = self.settings.query.max_chars
        bound = [ParsedQuery.bound(q, max_chars) for q in queries]
        if self.router is not None:
            for query in bound:
                set_route(query, self.router(query))
        return list(bound)

    def route(self, query: str) -> Route:
        """The route a search for ``query`` ranks with (``search --json`` shows it)."""
        text = ParsedQuery.bound(query, self.settings.query.max_chars)
        return self.router(text) if self.router is not None else route_query(text)

    def _answer(
        self, queries: list[str], options: SearchOptions, *, lookup: bool
    ) -> list[list[MemorySearchResult]]:
        """The answers of ``queries`` (already bounded): from the cache's tiers when
        ``lookup``, else all from the backend; the backend's answers are cached."""
        version = self._version() if self.config.enabled else None
        if version is None:
            return self._backend(list(queries), options)
        key = self._options_key(options)
        answers: list[list[MemorySearchResult] | None] = [
            (self.store.exact(version, key, normalise_query(q)) if lookup else None)
            if q.strip()
            else []
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
            if vector is not None and lookup:
                answers[index] = self.store.semantic(version, key, space, vector)
                if answers[index] is None and temporal and asks_recent(queries[index]):
                    answers[index] = self.store.temporal(version, key, space, vector)
            if answers[index] is None:
                missing.append((index, vector))
        if missing:
            groups = group_similar(
                [(normalise_query(queries[i]), v) for i, v in missing],
                self.config.semantic_threshold,
            )
            leaders = [missing[group[0]] for group in groups]
            found = self._backend([queries[i] for i, _ in leaders], options)
            self.batch_shared += len(missing) - len(leaders)
            unchanged = self._version() == version  # e.g. a bootstrap sync ran meanwhile
            for group, (index, vector), results in zip(groups, leaders, found, strict=True):
                for member in group:
                    answers[missing[member][0]] = list(results)
                if unchanged:
                    text = normalise_query(queries[index])
                    recent = asks_recent(text)
                    self.store.put(
                        version, key, text, results, space=space, vector=vector, recent=recent
                    )
        return [list(a) if a is not None else [] for a in answers]

    async def async_search(
        self,
        query: str,
        *,
        max_results: int | None = None,
        min_score: float | None = None,
        session_key: str | None = None,
        sources: Sequence[str] | None = None,
        stale_ok: bool = False,
    ) -> list[MemorySearchResult]:
        """Async :meth:`search`. With ``stale_ok``, a query answered before returns that
        answer at once, even when it has expired or the index changed since, and a refresh
        runs in the background (:meth:`refresh`; one at a time per query), so the next call
        gets the new answer; a query never answered waits for the search as usual."""
        options = SearchOptions.of(
            max_results=max_results, min_score=min_score, session_key=session_key, sources=sources
        )
        if stale_ok and self.config.enabled:
            [text] = self._bound([query])
            key = self._options_key(options)
            version = self._version()
            fresh = (
                None if version is None else self.store.exact(version, key, normalise_query(text))
            )
            stale = self.store.last(key, normalise_query(text)) if fresh is None else None
            if fresh is not None or stale is not None:
                if fresh is None:
                    self.stale_served += 1
                    self._refresh_later(text, options)
                return self._tracked([text], [fresh if fresh is not None else stale or []])[0]
        import asyncio  # not at the top: most commands that import this never search async

        return (await asyncio.to_thread(self.search_batch, [query], options))[0]

    def refresh(self, query: str, options: SearchOptions | None = None) -> list[MemorySearchResult]:
        """Search the backend for ``query`` with ``options`` (``None``: the defaults) past the
        cache's tiers and cache the answer; the search is not recorded as a recall."""
        return self._answer(self._bound([query]), options or SearchOptions(), lookup=False)[0]

    def _refresh_later(self, text: str, options: SearchOptions) -> None:
        """:meth:`refresh` in a background thread, unless one already runs for ``text``."""
        key = (self._options_key(options), normalise_query(text))
        with self._refresh_lock:
            if key in self._refreshing:
                return
            thread = threading.Thread(
                target=self._run_refresh, args=(key, text, options), daemon=True
            )
            self._refreshing[key] = thread
        thread.start()

    def _run_refresh(self, key: tuple[str, str], text: str, options: SearchOptions) -> None:
        try:
            self.refresh(text, options)
        except Exception as exc:  # the next search reports the backend's failure itself
            log.warning("memwell: background refresh of a stale answer failed: %s", exc)
        finally:
            with self._refresh_lock:
                self._refreshing.pop(key, None)

    def wait_for_refreshes(self, timeout: float = REFRESH_WAIT_SECONDS) -> bool:
        """Wait until no background refresh runs; false on timeout."""
        deadline = time.monotonic() + timeout
        while True:
            with self._refresh_lock:
                running = list(self._refreshing.values())
            if not running:
                return True
            for thread in running:
                thread.join(max(0.0, deadline - time.monotonic()))
            if time.monotonic() >= deadline:
                with self._refresh_lock:
                    return not self._refreshing

    def _tracked(
        self, queries: Sequence[str], answers: list[list[MemorySearchResult]]
    ) -> list[list[MemorySearchResult]]:
        """Record every answer, cached or not, with the tracker (if any)."""
        if self.tracker is not None:
            self.tracker.record_searches(zip(queries, answers, strict=True))
        return answers

    def _backend(
        self, queries: list[str], options: SearchOptions
    ) -> list[list[MemorySearchResult]]:
        self.backend_searches += len(queries)
        return search_batch(self._inner, queries, options)

    # -- sessions and warm-up ---------------------------------------------------------------

    def open_session(self, session_key: str | None) -> None:
        """Warm up (:meth:`warm`) the first time ``session_key`` is seen; with
        ``[cache.recall] warm_on_session``, also for the current part of the day
        (:meth:`warm_for`)."""
        if session_key is None or session_key in self._sessions:
            return
        self._sessions.add(session_key)
        self.warm()
        if self.config.warm_on_session and self.tracker is not None:
            try:
                self.warm_for(period_of(datetime.now().astimezone()))
            except Exception as exc:
                log.warning("memwell time-of-day warm-up failed: %s: %s", type(exc).__name__, exc)

    def warm_for(self, period: str) -> WarmUp:
        """Answer into the cache the queries ``period`` (``morning``, ``afternoon``,
        ``evening``, ``night``) usually asks, learned from the recall sidecar's query log
        (:mod:`memwell.recall.warmup`), with the default search options. Warming is not
        recorded as recalls, nor logged as asked.

        :raises ValueError: an unknown part of the day.
        :raises MemwellError: recall tracking is off, so there is no history to learn from.
        """
        chosen = check_period(period)
        if self.tracker is None:
            raise MemwellError(
                "time-of-day warm-up learns from the recall history, and [recall_tracking] "
                "enabled is false"
            )
        started = time.perf_counter()
        usual = usual_queries(
            self.tracker.asked(HOURS[chosen]),
            limit=self.config.warm_queries,
            min_days=self.config.warm_min_days,
        )
        texts = self._bound([u.query for u in usual])
        defaults = SearchOptions()
        if texts:
            self._answer(texts, defaults, lookup=True)
        key = self._options_key(defaults)
        cached = sum(self.store.last(key, normalise_query(t)) is not None for t in texts)
        millis = (time.perf_counter() - started) * 1000
        return WarmUp(period=chosen, queries=usual, cached=cached, millis=millis)

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
            batch_shared=self.batch_shared,
            stale_served=self.stale_served,
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
        self.wait_for_refreshes()
        self._inner.close()
        if self.tracker is not None:
            self.tracker.close()


__getattr__ = moved_attributes(__name__, {"unwrap": "memwell.runtime.fallback"})
