""":class:`MemoryBackend`: a base class that owns a backend's lifecycle.

A backend that subclasses it writes indexing and scoring; the base class does the rest, the same
way for every backend:

- the closed flag (a call after :meth:`~MemoryBackend.close` raises
  :class:`~memwell.contract.errors.BackendUnavailableError`), one sync at a time with no request
  lost (:class:`~memwell.util.sync_gate.SyncGate`) and the last sync error;
- the search preamble, for one query or a batch (:meth:`~MemoryBackend.search_batch`, which
  takes the caller's :class:`~memwell.contract.search_options.SearchOptions` record as the
  layers above passed it down): each query cut to ``query.max_chars`` once
  (into a :class:`~memwell.retrieval.parsed_query.ParsedQuery`; one the recall cache made is
  not cut again), blank queries or unsupported sources give ``[]``, sync on search, the
  result limit, the score floor and the candidate pool, then citations, added here only;
- :meth:`~MemoryBackend.read_file` with the core's safe-read rules (session transcripts too,
  when the backend indexes them);
- the status skeleton (backend, provider, model and search mode actually in use, workspace);
- the probes, and the async wrappers of :class:`~memwell.contract.manager.BaseMemoryManager`.

Subclasses implement :meth:`~MemoryBackend._sync`, :meth:`~MemoryBackend._search` and
:meth:`~MemoryBackend._index_status`; the hooks :meth:`~MemoryBackend._search_many`,
:meth:`~MemoryBackend._sync_before_search`, :meth:`~MemoryBackend._probe_vector_store` and
:meth:`~MemoryBackend._close` have defaults, and anything else may be overridden.
"""

from __future__ import annotations

import os
import threading
from abc import abstractmethod
from collections.abc import Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, ClassVar, Protocol, cast

import msgspec

from memwell.contract.config import HybridSettings
from memwell.contract.descriptors import BackendContext
from memwell.contract.errors import BackendUnavailableError
from memwell.contract.manager import BaseMemoryManager, BatchSearchMixin, ProgressCallback
from memwell.contract.models import (
    MemorySearchResult,
    MemoryStatus,
    ProbeResult,
    ReadFileResult,
    SyncProgress,
)
from memwell.contract.search_options import SearchOptions
from memwell.curation.session_delta import SESSIONS_ONLY_REASONS
from memwell.retrieval.calibration import Calibration, calibrate, probe_languages
from memwell.retrieval.candidate import Candidate
from memwell.retrieval.chunking import CHUNKER_VERSION, Chunk, chunk_markdown
from memwell.retrieval.limits import enforce_input_limit
from memwell.retrieval.parsed_query import ParsedQuery
from memwell.retrieval.pipeline import (
    floor_vector_only,
    fuse_hybrid,
    keyword_floor,
    ranked_order,
)
from memwell.retrieval.snippets import DEFAULT_SNIPPET_LIMIT, citations_enabled, to_results
from memwell.sources.discovery import list_memory_files, read_source_file, stat_source_file
from memwell.sources.paths import read_memory_file
from memwell.sources.sessions import readable_sessions_dir
from memwell.util.lazy_import import lazy_logger
from memwell.util.sync_gate import SyncGate

log = lazy_logger(__name__)

if TYPE_CHECKING:
    from memwell.contract.embeddings import Vector
    from memwell.providers.runtime import EmbeddingRuntime

MAX_CANDIDATE_POOL = 200
"""The most candidates one retriever returns for a search (the reference's cap)."""

FTS_ONLY_MODEL = "fts-only"
"""The model shown, and stored with an index, when no embedding provider is in use."""

NO_PROVIDER = "no embedding provider (keyword-only mode)"

REINDEX_PENDING = "index was built with another embedding model; reindex pending"

CLOSE_WAIT_SECONDS = 600.0
"""How long :meth:`MemoryBackend.wait_for_sync` waits for a running sync by default."""


class SearchRequest(msgspec.Struct, frozen=True):
    """A search after the preamble: a non-blank query and the caller's
    :class:`~memwell.contract.search_options.SearchOptions` resolved for this backend (its
    default floor, the sources it indexes, the configured limits).

    ``query`` is a :class:`~memwell.retrieval.parsed_query.ParsedQuery`: the text, cut once to
    ``query.max_chars``, that keeps its parses, so the parsing functions (``query_terms``,
    ``build_fts_query``, ``parse_boolean``...) and the ranking stages given ``request.query``
    parse it once per search. Pass the request, or ``request.query`` itself, down to the
    code that searches (a copy of the text, ``str(request.query)``, would be parsed anew).
    ``pool`` is how many candidates each retriever should return (``limit`` times the
    candidate multiplier, capped at :data:`MAX_CANDIDATE_POOL`).
    """

    query: str
    limit: int
    min_score: float
    pool: int
    sources: frozenset[str]
    session_key: str | None
    hybrid: HybridSettings


class KnownFile(Protocol):
    """What an index remembers of a file, for :meth:`MemoryBackend.scan_files`."""

    @property
    def mtime_ns(self) -> int: ...

    @property
    def size(self) -> int: ...

    @property
    def hash(self) -> str: ...


class ScannedFile(msgspec.Struct, frozen=True):
    """A memory file found by :meth:`MemoryBackend.scan_files`.

    ``chunks`` is ``None`` when the file's content is what the index already holds (only its
    stat data may have changed); otherwise it is the new content, chunked.
    """

    path: str
    mtime_ns: int
    size: int
    hash: str
    chunks: list[Chunk] | None


class MemoryBackend(BatchSearchMixin, BaseMemoryManager):
    """Base class for backends; see the module docstring for what it owns.

    :cvar name: the backend name shown in ``status()``.
    :cvar supported_sources: the sources the backend can index (``"memory"``, ``"sessions"``);
        it searches those of them that ``settings.sources`` names.
    :cvar default_min_score: the score floor of a search that gives none (``None``:
        ``query.min_score``).
    :ivar snippet_chars: how long a result's snippet may be (before its citation).
    :ivar _lock: a re-entrant lock for the subclass's own state (syncs are serialised
        without it, so a search may read under it while a sync runs).
    """

    name: ClassVar[str] = "unnamed"
    supported_sources: ClassVar[frozenset[str]] = frozenset({"memory"})
    default_min_score: ClassVar[float | None] = None

    def __init__(self, ctx: BackendContext) -> None:
        self.ctx = ctx
        self.workspace = ctx.workspace
        self.settings = ctx.settings
        # core builds every context with its EmbeddingRuntime (the factory); the contract
        # names only the EmbeddingService part of it, so the contract imports no runtime.
        self.runtime = cast("EmbeddingRuntime", ctx.embeddings)
        self.purpose = ctx.purpose
        self.closed = False
        self.last_sync_error: str | None = None
        self.snippet_chars = DEFAULT_SNIPPET_LIMIT
        self._lock = threading.RLock()
        self._gate = SyncGate()
        self._calibrated = False
        self._calibration: Calibration | None = None
        self.sync_sources: frozenset[str] | None = None
        """While :meth:`_sync` runs: the only sources it needs to scan (``{"sessions"}`` for
        a session-delta sync, :data:`~memwell.curation.session_delta.SESSIONS_ONLY_REASONS`),
        or ``None`` for all. A backend may ignore it and sync everything."""
        self._closing = threading.Lock()

    # -- what subclasses write --------------------------------------------------------------

    @abstractmethod
    def _sync(self, *, reason: str, force: bool, progress: ProgressCallback | None) -> None:
        """Bring the index up to date (one call at a time, see :meth:`sync`)."""

    @abstractmethod
    def _search(self, request: SearchRequest) -> list[Candidate]:
        """The ranked, floored candidates for ``request`` (see :meth:`rank_hybrid`)."""

    @abstractmethod
    def _index_status(self) -> dict[str, Any]:
        """The backend's own :class:`~memwell.contract.models.MemoryStatus` fields (files,
        chunks...).

        They go on top of the shared ones, so they may correct them (a search mode the index
        cannot serve, say); :meth:`provider_fields` gives the provider part.
        """

    def _search_many(self, requests: Sequence[SearchRequest]) -> list[list[Candidate]]:
        """The candidates of each request, in order (the requests differ only in ``query``).

        Override it to answer a batch at once (one embedding call, one pass over the index).
        """
        return [self._search(request) for request in requests]

    def _sync_before_search(self, session_key: str | None) -> None:
        """Called before every search; by default, syncs when ``sync.on_search`` is set."""
        if self.settings.sync.on_search:
            self.sync(reason="search")

    def _probe_vector_store(self) -> ProbeResult:
        """Whether the vector store works, once a provider is in use; by default, whether
        embedding does."""
        self.runtime.embed_documents(["ping"])
        return ProbeResult(ok=True)

    def _close(self) -> None:
        """Release the backend's resources; called once by :meth:`close`, after the closed
        flag is set (a sync may still be running: :meth:`wait_for_sync` waits for it)."""

    # -- building blocks for subclasses -----------------------------------------------------

    def index_identity(self) -> dict[str, Any]:
        """What every index depends on: the provider's vector space and the chunking.

        Store it with the index and rebuild when it changes; add your own format version.
        """
        chunking = self.settings.chunking
        return {
            "provider_key": self.runtime.provider_key(),
            "chunking": [chunking.tokens, chunking.overlap, CHUNKER_VERSION],
        }

    def chunk(self, text: str) -> list[Chunk]:
        """``text`` cut into chunks with the configured budget, each fitting the model."""
        chunking = self.settings.chunking
        chunks = chunk_markdown(text, tokens=chunking.tokens, overlap=chunking.overlap)
        return enforce_input_limit(chunks, self.runtime.max_input_tokens())

    def scan_files(
        self, known: Mapping[str, KnownFile], progress: ProgressCallback | None = None
    ) -> Iterator[ScannedFile]:
        """Every memory file, reading and chunking only those whose content changed.

        A file whose size and mtime match ``known`` is not read; one whose bytes hash to the
        known hash is not chunked. Files that vanish or cannot be read are left out, so the
        caller drops them from the index.
        """
        paths = list_memory_files(self.workspace, self.settings.extra_paths)
        for done, abs_path in enumerate(paths, start=1):
            if progress is not None:
                progress(SyncProgress(completed=done, total=len(paths), label=abs_path.name))
            stat = stat_source_file(abs_path, self.workspace)
            if stat is None:
                continue
            rel, mtime_ns, size = stat
            old = known.get(rel)
            if old is not None and (old.mtime_ns, old.size) == (mtime_ns, size):
                yield ScannedFile(rel, mtime_ns, size, old.hash, None)
                continue
            read = read_source_file(abs_path, self.workspace)
            if read is None:
                continue
            source, text = read
            chunks = None if old is not None and old.hash == source.hash else self.chunk(text)
            yield ScannedFile(source.path, source.mtime_ns, source.size, source.hash, chunks)

    def embed_new(self, chunks: Sequence[Chunk], known: Mapping[str, object]) -> dict[str, Vector]:
        """Vectors of the distinct chunks whose hash is not in ``known``, embedded in one batch.

        Empty in keyword-only mode. Keep vectors by chunk hash and pass them as ``known``, so
        an unchanged chunk is never embedded twice.
        """
        if self.runtime.provider is None:
            return {}
        missing = {c.hash: c.text for c in chunks if c.hash not in known}
        if not missing:
            return {}
        matrix = self.runtime.embed_documents(list(missing.values()))
        return dict(zip(missing, matrix, strict=True))

    def mtime_of(self, path: str) -> float | None:
        """A workspace path's modification time, for temporal decay of undated files."""
        try:
            return os.stat(self.workspace / path).st_mtime
        except OSError:
            return None

    def rank_keyword(self, keyword: Sequence[Candidate], request: SearchRequest) -> list[Candidate]:
        """Keyword-only ranking: decay, sort, MMR, then the keyword-only floor."""
        ranked = ranked_order(keyword, request.hybrid, mtime_of=self.mtime_of, query=request.query)
        return keyword_floor(ranked, request.min_score, request.limit)

    def rank_hybrid(
        self,
        vector: Sequence[Candidate],
        keyword: Sequence[Candidate],
        request: SearchRequest,
        query_vector: Vector | None = None,
    ) -> list[Candidate]:
        """Hybrid ranking: fusion, decay, sort, MMR, then the floor; scores are calibrated
        for the provider (:meth:`score_calibration`), as the builtin backend's are (across
        scripts with the query's own offset when its ``query_vector`` is given)."""
        return fuse_hybrid(
            vector,
            keyword,
            request.hybrid,
            min_score=request.min_score,
            max_results=request.limit,
            mtime_of=self.mtime_of,
            calibration=self.score_calibration() if vector else None,
            query=request.query,
            query_vector=query_vector,
        )

    def rank_vector_only(
        self,
        vector: Sequence[Candidate],
        request: SearchRequest,
        query_vector: Vector | None = None,
    ) -> list[Candidate]:
        """Vector-only ranking (``query.hybrid.enabled = false``): cosines on the provider's
        calibrated scale, as :meth:`rank_hybrid` gives fused scores, then the floor."""
        return floor_vector_only(
            vector,
            min_score=request.min_score,
            max_results=request.limit,
            calibration=self.score_calibration() if vector else None,
            query=request.query,
            query_vector=query_vector,
        )

    def score_calibration(self) -> Calibration | None:
        """The provider's score calibration (:mod:`memwell.retrieval.calibration`), measured
        once per manager on the shipped probe pairs; ``None`` (uncalibrated cosines, said in
        the log) when the model gives no usable scale or the measurement fails."""
        with self._lock:
            if not self._calibrated:
                self._calibrated = True
                try:
                    self._calibration = calibrate(
                        self.runtime.embed_queries,
                        self.runtime.embed_documents,
                        probe_languages(self.runtime.provider),
                    )
                except Exception as exc:
                    log.warning("memwell: score calibration failed (%s); raw cosines", exc)
                if self._calibration is None:
                    log.info("memwell: %s scores are uncalibrated cosines", self.name)
            return self._calibration

    def check_open(self) -> None:
        """Raise :class:`BackendUnavailableError` once the manager is closed."""
        if self.closed:
            raise BackendUnavailableError(f"{self.name} memory manager is closed")

    def indexed_sources(self) -> frozenset[str]:
        """The sources this manager indexes and searches: supported and configured."""
        return self.supported_sources & frozenset(self.settings.sources)

    def describe_sync_error(self, exc: Exception) -> str:
        """How a failed sync is shown in ``status().last_sync_error``."""
        return f"{type(exc).__name__}: {exc}"

    def wait_for_sync(self, timeout: float = CLOSE_WAIT_SECONDS) -> bool:
        """Wait until no sync runs (for :meth:`_close`); false on timeout."""
        return self._gate.wait_idle(timeout)

    def provider_fields(self, *, select: bool = True) -> dict[str, Any]:
        """The status fields of the embedding provider in use.

        ``select=False`` does not select a provider that no call has needed yet (it may
        load a model or probe a server): the configured one is shown instead.
        """
        requested = self.settings.provider
        # ``query.hybrid.enabled = false``: searches with a provider run on vectors alone
        with_vectors = "hybrid" if self.settings.query.hybrid.enabled else "vector-only"
        if not select and not self.runtime.initialized:
            fields: dict[str, Any] = {"provider": requested, "model": self.settings.model or None}
            if requested != "none" and with_vectors != "hybrid":
                fields["search_mode"] = with_vectors
            return fields
        try:
            selection = self.runtime.selection()
        except Exception as exc:
            return {
                "provider": requested,
                "model": self.settings.model or None,
                "search_mode": "disabled",
                "provider_unavailable_reason": f"{type(exc).__name__}: {exc}",
            }
        if selection.provider is None:
            return {
                "provider": "none",
                "model": FTS_ONLY_MODEL,
                "search_mode": "fts-only",
                "provider_unavailable_reason": selection.unavailable_reason,
                "provider_fallback": selection.fallback,
            }
        return {
            "provider": selection.provider.id,
            "model": selection.provider.model,
            "search_mode": with_vectors,
            "provider_fallback": selection.fallback,
        }

    # -- the protocol -----------------------------------------------------------------------

    def sync(
        self,
        *,
        reason: str = "manual",
        force: bool = False,
        progress: ProgressCallback | None = None,
    ) -> None:
        """Bring the index up to date; a failure is kept in ``status().last_sync_error``.

        A call made while another sync runs waits for it and then gets a sync of its own
        (shared with the other calls that waited meanwhile), so no edit made during a sync
        is left unindexed.
        """
        self.check_open()
        scope = frozenset({"sessions"}) if reason in SESSIONS_ONLY_REASONS else None
        self._gate.run(
            lambda forced, only: self._tracked_sync(reason, forced, progress, only),
            force=force,
            sources=scope,
        )

    def _tracked_sync(
        self,
        reason: str,
        force: bool,
        progress: ProgressCallback | None,
        only: frozenset[str] | None,
    ) -> None:
        self.check_open()  # closed while this request waited for a running sync
        self.last_sync_error = None
        self.sync_sources = only
        try:
            self._sync(reason=reason, force=force, progress=progress)
        except Exception as exc:
            self.last_sync_error = self.describe_sync_error(exc)
            raise
        finally:
            self.sync_sources = None

    def search_batch(
        self, queries: Sequence[str], options: SearchOptions
    ) -> list[list[MemorySearchResult]]:
        """Every query searched with ``options``, in order: the options resolved once into a
        :class:`SearchRequest` per distinct query, and one :meth:`_search_many` for all."""
        self.check_open()
        max_chars = self.settings.query.max_chars
        texts = [ParsedQuery.bound(q, max_chars) if isinstance(q, str) else "" for q in queries]
        wanted = self.indexed_sources()
        if options.sources is not None:
            wanted &= options.sources
        asked = [t for t in dict.fromkeys(texts) if t]
        if not asked or not wanted:
            return [[] for _ in texts]
        session_key = options.session_key
        self._sync_before_search(session_key)
        query_settings = self.settings.query
        limit = max(1, options.max_results or query_settings.max_results)
        min_score = options.min_score
        if min_score is None:
            min_score = self.default_min_score
        requests = [
            SearchRequest(
                query=text,
                limit=limit,
                min_score=query_settings.min_score if min_score is None else min_score,
                pool=min(MAX_CANDIDATE_POOL, limit * query_settings.hybrid.candidate_multiplier),
                sources=wanted,
                session_key=session_key,
                hybrid=query_settings.hybrid,
            )
            for text in asked
        ]
        found = self._search_many(requests)
        cite = citations_enabled(self.settings.citations, session_key)
        answers = {
            text: to_results(cands, citations=cite, snippet_chars=self.snippet_chars)
            for text, cands in zip(asked, found, strict=True)
        }
        return [list(answers[text]) if text else [] for text in texts]

    def read_file(
        self, rel_path: str, *, from_line: int | None = None, lines: int | None = None
    ) -> ReadFileResult:
        """Read memory lines under the core's safe-read rules (Markdown inside the memory,
        and session transcripts when the backend indexes them)."""
        sessions = None
        if "sessions" in self.supported_sources:
            sessions = readable_sessions_dir(
                self.workspace, self.settings.sessions_dir, self.settings.sources
            )
        return read_memory_file(
            self.workspace,
            rel_path,
            from_line=from_line,
            lines=lines,
            extra_paths=self.settings.extra_paths,
            sessions_dir=sessions,
        )

    def status(self) -> MemoryStatus:
        """The shared fields, then the backend's own (:meth:`_index_status`) on top."""
        fields: dict[str, Any] = {
            "backend": self.name,
            "query_max_chars": self.settings.query.max_chars,
            "requested_provider": self.settings.provider,
            "workspace_dir": str(self.workspace),
            "extra_paths": list(self.settings.extra_paths),
            "sources": sorted(self.indexed_sources()),
            "last_sync_error": self.last_sync_error,
            **self.provider_fields(),
        }
        fields.update(self._index_status())
        if fields.get("search_mode", "hybrid") in ("fts-only", "disabled", "file-scan"):
            fields["vectors"] = None  # vectors are not in use
        return MemoryStatus(**fields)

    def probe_embedding(self) -> ProbeResult:
        """Embed one text with the provider in use."""
        try:
            if self.runtime.provider is None:
                reason = self.runtime.selection().unavailable_reason
                return ProbeResult(ok=False, error=reason or NO_PROVIDER)
            self.runtime.embed_documents(["ping"])
        except Exception as exc:
            return ProbeResult(ok=False, error=f"{type(exc).__name__}: {exc}")
        return ProbeResult(ok=True)

    def probe_vector(self) -> ProbeResult:
        """Whether vector search works: a provider is in use and the store answers."""
        try:
            if self.runtime.provider is None:
                return ProbeResult(ok=False, error=NO_PROVIDER)
            return self._probe_vector_store()
        except Exception as exc:
            return ProbeResult(ok=False, error=f"{type(exc).__name__}: {exc}")

    def close(self) -> None:
        """Release resources; idempotent, and every later call raises."""
        with self._closing:
            if self.closed:
                return
            self.closed = True
        self._close()
