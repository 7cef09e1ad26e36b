""":class:`MemoryBackend`: a base class that owns a backend's lifecycle.

A backend that subclasses it writes indexing and scoring; the base class does the rest, the same
way for every backend:

- the closed flag (a call after :meth:`~MemoryBackend.close` raises
  :class:`~memwell.errors.BackendUnavailableError`) and the last sync error;
- the search preamble: the query cut to ``query.max_chars``, a blank query or unsupported
  sources give ``[]``, sync on search, the result limit, the score floor and the candidate
  pool, then citations, added here only;
- :meth:`~MemoryBackend.read_file` with the core's safe-read rules;
- the status skeleton (backend, provider, model and search mode actually in use, workspace);
- the probes, and the async wrappers of :class:`~memwell.manager.BaseMemoryManager`.

Subclasses implement :meth:`~MemoryBackend._sync`, :meth:`~MemoryBackend._search` and
:meth:`~MemoryBackend._index_status`, and may override anything else.
"""

from __future__ import annotations

import os
import threading
from abc import abstractmethod
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, Protocol

from .config import HybridSettings
from .descriptors import BackendContext
from .errors import BackendUnavailableError
from .manager import BaseMemoryManager, ProgressCallback
from .models import MemorySearchResult, MemoryStatus, ProbeResult, ReadFileResult, SyncProgress
from .retrieval.candidate import Candidate
from .retrieval.chunking import CHUNKER_VERSION, Chunk, chunk_markdown
from .retrieval.limits import enforce_input_limit
from .retrieval.pipeline import fuse_hybrid, keyword_floor, rank_candidates
from .retrieval.query_limit import bound_query
from .retrieval.snippets import citations_enabled, to_results
from .sources.discovery import list_memory_files, read_source_file, stat_source_file
from .sources.paths import read_memory_file

if TYPE_CHECKING:
    from .embeddings import Vector

MAX_CANDIDATE_POOL = 200
"""The most candidates one retriever returns for a search (the reference's cap)."""


@dataclass(frozen=True)
class SearchRequest:
    """A search after the preamble: a non-blank query and resolved limits.

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


@dataclass(frozen=True)
class ScannedFile:
    """A memory file found by :meth:`MemoryBackend.scan_files`.

    ``chunks`` is ``None`` when the file's content is what the index already holds (only its
    stat data may have changed); otherwise it is the new content, chunked.
    """

    path: str
    mtime_ns: int
    size: int
    hash: str
    chunks: list[Chunk] | None


class MemoryBackend(BaseMemoryManager):
    """Base class for backends; see the module docstring for what it owns.

    :cvar name: the backend name shown in ``status()``.
    :cvar supported_sources: the sources the backend indexes (``"memory"``, ``"sessions"``).
    """

    name: ClassVar[str] = "unnamed"
    supported_sources: ClassVar[frozenset[str]] = frozenset({"memory"})

    def __init__(self, ctx: BackendContext) -> None:
        self.ctx = ctx
        self.workspace = ctx.workspace
        self.settings = ctx.settings
        self.runtime = ctx.embeddings
        self.closed = False
        self.last_sync_error: str | None = None
        self._lock = threading.RLock()

    # -- what subclasses write --------------------------------------------------------------

    @abstractmethod
    def _sync(self, *, reason: str, force: bool, progress: ProgressCallback | None) -> None:
        """Bring the index up to date (called under the manager's lock)."""

    @abstractmethod
    def _search(self, request: SearchRequest) -> list[Candidate]:
        """The ranked, floored candidates for ``request`` (see :meth:`rank_hybrid`)."""

    @abstractmethod
    def _index_status(self) -> dict[str, Any]:
        """The backend's own :class:`~memwell.models.MemoryStatus` fields (files, chunks...)."""

    def _close(self) -> None:
        """Release the backend's resources; called once by :meth:`close`."""

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
        ranked = rank_candidates(keyword, request.hybrid, mtime_of=self.mtime_of)
        return keyword_floor(ranked, request.min_score, request.limit)

    def rank_hybrid(
        self,
        vector: Sequence[Candidate],
        keyword: Sequence[Candidate],
        request: SearchRequest,
    ) -> list[Candidate]:
        """Hybrid ranking: fusion, decay, sort, MMR, then the strict-then-relaxed floor."""
        return fuse_hybrid(
            vector,
            keyword,
            request.hybrid,
            min_score=request.min_score,
            max_results=request.limit,
            mtime_of=self.mtime_of,
        )

    def check_open(self) -> None:
        """Raise :class:`BackendUnavailableError` once the manager is closed."""
        if self.closed:
            raise BackendUnavailableError(f"{self.name} memory manager is closed")

    # -- the protocol -----------------------------------------------------------------------

    def sync(
        self,
        *,
        reason: str = "manual",
        force: bool = False,
        progress: ProgressCallback | None = None,
    ) -> None:
        """Bring the index up to date; a failure is kept in ``status().last_sync_error``."""
        self.check_open()
        with self._lock:
            try:
                self._sync(reason=reason, force=force, progress=progress)
            except Exception as exc:
                self.last_sync_error = f"{type(exc).__name__}: {exc}"
                raise
            self.last_sync_error = None

    def search(
        self,
        query: str,
        *,
        max_results: int | None = None,
        min_score: float | None = None,
        session_key: str | None = None,
        sources: Sequence[str] | None = None,
    ) -> list[MemorySearchResult]:
        """Search after the shared preamble; citations follow ``settings.citations``."""
        self.check_open()
        max_chars = self.settings.query.max_chars
        text = bound_query(query, max_chars) if isinstance(query, str) else ""
        wanted = self.supported_sources if sources is None else frozenset(sources)
        wanted &= self.supported_sources
        if not text or not wanted:
            return []
        if self.settings.sync.on_search:
            self.sync(reason="search")
        query_settings = self.settings.query
        limit = max(1, max_results or query_settings.max_results)
        request = SearchRequest(
            query=text,
            limit=limit,
            min_score=query_settings.min_score if min_score is None else min_score,
            pool=min(MAX_CANDIDATE_POOL, limit * query_settings.hybrid.candidate_multiplier),
            sources=wanted,
            session_key=session_key,
            hybrid=query_settings.hybrid,
        )
        found = self._search(request)
        citations = citations_enabled(self.settings.citations, session_key)
        return to_results(found, citations=citations)

    def read_file(
        self, rel_path: str, *, from_line: int | None = None, lines: int | None = None
    ) -> ReadFileResult:
        """Read memory lines under the core's safe-read rules (Markdown inside the memory)."""
        return read_memory_file(
            self.workspace,
            rel_path,
            from_line=from_line,
            lines=lines,
            extra_paths=self.settings.extra_paths,
        )

    def status(self) -> MemoryStatus:
        """The shared fields, then the backend's own (:meth:`_index_status`) on top."""
        fields: dict[str, Any] = {"provider": "none", "search_mode": "fts-only"}
        try:
            provider = self.runtime.provider
        except Exception as exc:
            fields.update(search_mode="disabled", provider_unavailable_reason=str(exc))
        else:
            if provider is not None:
                fields.update(provider=provider.id, model=provider.model, search_mode="hybrid")
        fields.update(
            backend=self.name,
            query_max_chars=self.settings.query.max_chars,
            requested_provider=self.settings.provider,
            workspace_dir=str(self.workspace),
            extra_paths=list(self.settings.extra_paths),
            last_sync_error=self.last_sync_error,
        )
        fields.update(self._index_status())
        if fields["search_mode"] != "hybrid":
            fields["vectors"] = None  # vectors are not in use
        return MemoryStatus(**fields)

    def probe_embedding(self) -> ProbeResult:
        """Embed one text with the provider in use."""
        try:
            if self.runtime.provider is None:
                return ProbeResult(ok=False, error="no embedding provider (keyword-only mode)")
            self.runtime.embed_documents(["ping"])
        except Exception as exc:
            return ProbeResult(ok=False, error=f"{type(exc).__name__}: {exc}")
        return ProbeResult(ok=True)

    def probe_vector(self) -> ProbeResult:
        """Whether vector search works; by default, whether embedding does."""
        return self.probe_embedding()

    def close(self) -> None:
        """Release resources; idempotent, and every later call raises."""
        with self._lock:
            if self.closed:
                return
            self.closed = True
            self._close()
