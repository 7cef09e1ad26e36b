""":class:`RecallStore`: the entries of the recall cache, with its three lookup tiers.

One entry per answered query holds the normalised text, the options, the query vector (when
the backend has a query embedder), whether it asked about recent events, and the results. The
exact tier matches text and options within ``exact_ttl_seconds``; the semantic tier matches the
options and a cosine similarity of at least ``semantic_threshold`` with the vector, within
``semantic_ttl_seconds``; the temporal tier matches, among the recent-events questions, a
cosine of at least ``temporal_threshold`` within ``temporal_ttl_seconds`` (seed 004's 0.7 and
7 days). Every entry
belongs to one content version of the index: a lookup under a new version drops them all.
The store is bounded by entries and by (estimated) bytes, evicting the least recently used.
Apart from the entries, the latest answer of each query is kept across versions and TTLs
(:meth:`RecallStore.last`, bounded the same way) for searches that accept a stale answer.
"""

from __future__ import annotations

import threading
import time
import unicodedata
from collections import OrderedDict
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import msgspec

from memwell.contract.config import RecallCacheSettings
from memwell.contract.models import MemorySearchResult, RecallTierStatus
from memwell.util.lazy_import import lazy_module

if TYPE_CHECKING:
    import numpy as np

    from memwell.contract.embeddings import Vector
else:
    np = lazy_module("numpy")

Clock = Callable[[], float]
#: Estimated bytes of bookkeeping per entry and per result, on top of their text.
ENTRY_OVERHEAD = 200
RESULT_OVERHEAD = 160


def estimate_bytes(query: str, vector: Vector | None, results: Sequence[MemorySearchResult]) -> int:
    """An estimate of an entry's memory: its texts, its vector and fixed overheads."""
    texts = sum(len(r.snippet) + len(r.path) + len(r.citation or "") for r in results)
    vector_bytes = int(vector.nbytes) if vector is not None else 0
    return ENTRY_OVERHEAD + len(query) + vector_bytes + texts + RESULT_OVERHEAD * len(results)


class _Entry(msgspec.Struct, frozen=True):
    options: str
    query: str
    space: str
    vector: Vector | None
    results: tuple[MemorySearchResult, ...]
    created: float
    size: int
    recent: bool = False


class _Stack(msgspec.Struct, frozen=True):
    """The vectors of the entries with one options key and vector space, stacked once for
    every semantic lookup until an entry is added or dropped."""

    changes: int
    options: str
    space: str
    shape: tuple[int, ...]
    recent_only: bool
    keys: list[tuple[str, str]]
    created: np.ndarray[Any, np.dtype[np.float64]]
    matrix: np.ndarray[Any, np.dtype[np.float32]] | None


class RecallStore:
    """Thread-safe tiered entries; ``clock`` (seconds, monotonic) is injectable for tests."""

    def __init__(self, settings: RecallCacheSettings, clock: Clock = time.monotonic) -> None:
        self.settings = settings
        self.clock = clock
        self._entries: OrderedDict[tuple[str, str], _Entry] = OrderedDict()
        self._version: str | None = None
        self._bytes = 0
        self._lock = threading.Lock()
        self.exact_stats = RecallTierStatus()
        self.semantic_stats = RecallTierStatus()
        self.temporal_stats = RecallTierStatus()
        self.evictions = 0
        self.invalidations = 0
        self._changes = 0  # bumped whenever entries are added or dropped
        self._stacks: dict[bool, _Stack] = {}
        # The latest answer of each (options, query), kept across content versions and TTLs
        # for searches that accept a stale answer; bounded like the entries.
        self._last: OrderedDict[tuple[str, str], tuple[tuple[MemorySearchResult, ...], int]]
        self._last = OrderedDict()
        self._last_bytes = 0

    @property
    def entries(self) -> int:
        return len(self._entries)

    @property
    def bytes(self) -> int:
        return self._bytes

    def _use_version(self, version: str) -> None:
        """Drop every entry of another content version (hold the lock)."""
        if version == self._version:
            return
        if self._version is not None:
            self.invalidations += 1
        self._changes += 1
        self._entries.clear()
        self._bytes = 0
        self._version = version

    def exact(self, version: str, options: str, query: str) -> list[MemorySearchResult] | None:
        """The results cached for exactly ``query`` with ``options``, or ``None``."""
        with self._lock:
            self._use_version(version)
            entry = self._entries.get((options, query))
            if entry is None or self.clock() - entry.created >= self.settings.exact_ttl_seconds:
                self.exact_stats.misses += 1
                return None
            self._entries.move_to_end((options, query))
            self.exact_stats.hits += 1
            return list(entry.results)

    def semantic(
        self, version: str, options: str, space: str, vector: Vector
    ) -> list[MemorySearchResult] | None:
        """The results of the most similar cached query with ``options`` whose vector is in
        the vector ``space`` (cosine at least the threshold, within the semantic TTL), or
        ``None``."""
        settings = self.settings
        return self._nearest(
            version,
            (options, space, vector, False),
            settings.semantic_threshold,
            settings.semantic_ttl_seconds,
            self.semantic_stats,
        )

    def temporal(
        self, version: str, options: str, space: str, vector: Vector
    ) -> list[MemorySearchResult] | None:
        """Like :meth:`semantic`, among cached questions about recent events only, with the
        temporal tier's threshold and TTL."""
        settings = self.settings
        return self._nearest(
            version,
            (options, space, vector, True),
            settings.temporal_threshold,
            settings.temporal_ttl_seconds,
            self.temporal_stats,
        )

    def _nearest(
        self,
        version: str,
        lookup: tuple[str, str, Vector, bool],
        threshold: float,
        ttl: float,
        stats: RecallTierStatus,
    ) -> list[MemorySearchResult] | None:
        options, space, vector, recent_only = lookup
        with self._lock:
            self._use_version(version)
            stack = self._stacked(options, space, vector.shape, recent_only)
            best: tuple[str, str] | None = None
            if stack.matrix is not None:
                scores = stack.matrix @ vector
                scores[self.clock() - stack.created >= ttl] = -np.inf
                top = int(np.argmax(scores))
                if float(scores[top]) >= threshold:
                    best = stack.keys[top]
            if best is None:
                stats.misses += 1
                return None
            self._entries.move_to_end(best)
            stats.hits += 1
            return list(self._entries[best].results)

    def _stacked(
        self, options: str, space: str, shape: tuple[int, ...], recent_only: bool
    ) -> _Stack:
        """The stacked vectors of the entries a lookup compares (hold the lock)."""
        stack = self._stacks.get(recent_only)
        if stack is not None and (stack.changes, stack.options, stack.space, stack.shape) == (
            self._changes,
            options,
            space,
            shape,
        ):
            return stack
        found = [
            (key, e.created, e.vector)
            for key, e in self._entries.items()
            if e.options == options
            and e.space == space
            and e.vector is not None
            and e.vector.shape == shape
            and (e.recent or not recent_only)
        ]
        matrix = np.vstack([v for _, _, v in found]) if found else None
        created = np.array([c for _, c, _ in found], dtype=np.float64)
        stack = _Stack(
            self._changes,
            options,
            space,
            shape,
            recent_only,
            [k for k, _, _ in found],
            created,
            matrix,
        )
        self._stacks[recent_only] = stack
        return stack

    def put(
        self,
        version: str,
        options: str,
        query: str,
        results: Sequence[MemorySearchResult],
        *,
        space: str = "",
        vector: Vector | None = None,
        recent: bool = False,
    ) -> None:
        """Remember ``results`` (with the query's vector in ``space`` when there is one, and
        whether it asked about recent events); an entry larger than the byte bound is not
        kept."""
        size = estimate_bytes(query, vector, results)
        if size > self.settings.max_bytes:
            return
        entry = _Entry(options, query, space, vector, tuple(results), self.clock(), size, recent)
        with self._lock:
            self._use_version(version)
            old = self._entries.pop((options, query), None)
            if old is not None:
                self._bytes -= old.size
            self._entries[(options, query)] = entry
            self._changes += 1
            self._bytes += size
            self._evict()
            self._keep_last((options, query), entry.results, size)

    def last(self, options: str, query: str) -> list[MemorySearchResult] | None:
        """The latest answer cached for exactly ``query`` with ``options``, however old and of
        whichever content version (``None`` if there was none)."""
        with self._lock:
            kept = self._last.get((options, query))
            if kept is None:
                return None
            self._last.move_to_end((options, query))
            return list(kept[0])

    def _keep_last(
        self, key: tuple[str, str], results: tuple[MemorySearchResult, ...], size: int
    ) -> None:
        """Remember ``results`` as ``key``'s latest answer (hold the lock)."""
        old = self._last.pop(key, None)
        self._last_bytes += size - (old[1] if old is not None else 0)
        self._last[key] = (results, size)
        while self._last and (
            len(self._last) > self.settings.max_entries
            or self._last_bytes > self.settings.max_bytes
        ):
            _, (_, dropped) = self._last.popitem(last=False)
            self._last_bytes -= dropped

    def _evict(self) -> None:
        """Drop expired entries, then the least recently used beyond the bounds."""
        settings = self.settings
        lifetime = max(settings.exact_ttl_seconds, settings.semantic_ttl_seconds)
        horizon = self.clock() - lifetime
        recent_horizon = self.clock() - max(lifetime, settings.temporal_ttl_seconds)
        expired = [
            key
            for key, e in self._entries.items()
            if e.created <= (recent_horizon if e.recent else horizon)
        ]
        for key in expired:
            self._bytes -= self._entries.pop(key).size
            self._changes += 1
        while self._entries and (
            len(self._entries) > self.settings.max_entries or self._bytes > self.settings.max_bytes
        ):
            _, dropped = self._entries.popitem(last=False)
            self._bytes -= dropped.size
            self._changes += 1
            self.evictions += 1


def normalise_query(query: str) -> str:
    """The exact tier's key text: Unicode NFKC, whitespace runs collapsed, ends stripped."""
    return " ".join(unicodedata.normalize("NFKC", query).split())
