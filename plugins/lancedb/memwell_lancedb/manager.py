"""``LanceMemoryManager``: the ``lancedb`` backend's :class:`~memwell.MemorySearchManager`.

It serves ``memory_search``/``memory_get`` over the workspace's Markdown (the document index)
and owns the long-term ``memories`` table used by ``memory_store``/``memory_recall``/
``memory_forget``, auto-recall and auto-capture.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from memwell.agent import TurnMessage, untrusted_block
from memwell.config import MemwellSettings
from memwell.descriptors import BackendContext
from memwell.embedding_runtime import EmbeddingRuntime
from memwell.errors import BackendUnavailableError, ProviderError
from memwell.manager import BaseMemoryManager, ProgressCallback
from memwell.models import (
    FtsStatus,
    MemorySearchResult,
    MemoryStatus,
    ProbeResult,
    ReadFileResult,
    SourceCount,
    VectorStatus,
)
from memwell.recall.manager import unwrap
from memwell.recall.query_vectors import QueryVectors
from memwell.retrieval.chunking import sha256_hex
from memwell.retrieval.query_limit import bound_query
from memwell.retrieval.snippets import format_citation, truncate_snippet
from memwell.sources.paths import read_memory_file
from memwell.sources.sessions import readable_sessions_dir

from .capture import CaptureDecision, capture_importance, detect_category, select_captures
from .config import LanceConfig, is_local_uri, resolve_uri
from .db import LanceDatabase
from .index import FTS_ONLY_MODEL, DocumentIndex
from .journal import Journal
from .store import MemoryRejected, MemoryStore

log = logging.getLogger(__name__)

BACKEND_NAME = "lancedb"
AUTO_RECALL_LIMIT = 3
AUTO_RECALL_MIN_SCORE = 0.3
AUTO_RECALL_MIN_PROMPT = 5


class LanceMemoryManager(BaseMemoryManager):
    """Markdown memory and long-term memories in one LanceDB database (local or remote)."""

    def __init__(self, ctx: BackendContext, config: LanceConfig | None = None) -> None:
        self.config = config or LanceConfig()
        self.workspace: Path = ctx.workspace
        self.settings: MemwellSettings = ctx.settings
        self.runtime: EmbeddingRuntime = ctx.embeddings
        self.uri = resolve_uri(self.config, self.workspace, self.settings.index_dir)
        self.db = LanceDatabase(self.uri, self.config)
        self.index = DocumentIndex(
            self.db, self.settings, self.runtime, self.workspace, self.config.index_namespace
        )
        self.journal: Journal | None = None
        if self.config.journal:
            self.journal = Journal(
                self.workspace / self.config.journal_path,
                self.workspace / self.settings.index_dir / "journal.lock",
            )
        self.memories = MemoryStore(self.db, self.runtime, self.journal)
        self.query_vectors = QueryVectors(self.runtime)
        self._fingerprint: tuple[tuple[str, int, int], ...] | None = None
        self._sync_lock = threading.Lock()
        self.closed = False
        self.last_sync_error: str | None = None
        self.last_search_error: str | None = None

    def _check_open(self) -> None:
        if self.closed:
            raise BackendUnavailableError("memory manager is closed")

    # -- sync -------------------------------------------------------------------------------

    def sync(
        self,
        *,
        reason: str = "manual",
        force: bool = False,
        progress: ProgressCallback | None = None,
    ) -> None:
        """Index new and changed files, drop vanished ones; ``force`` rebuilds everything."""
        self._check_open()
        with self._sync_lock:
            fingerprint = self.index.stat_fingerprint()
            try:
                stats = self.index.sync(force=force, progress=progress)
            except Exception as exc:
                self.last_sync_error = f"{type(exc).__name__}: {exc}"
                raise
            self.last_sync_error = None
            self._fingerprint = fingerprint
            log.info("memwell lancedb sync (%s): %s", reason, stats)

    def _refresh_before_search(self) -> None:
        """Bootstrap an empty index; with ``sync.on_search``, sync when files changed since
        the last sync (detected by a stat scan, without reading files)."""
        if self._fingerprint is None:
            needed = self.settings.sync.on_search or self.index.meta() is None
        else:
            needed = (
                self.settings.sync.on_search and self.index.stat_fingerprint() != self._fingerprint
            )
        if not needed:
            return
        try:
            self.sync(reason="search")
        except Exception as exc:
            log.warning("memwell lancedb: sync before search failed: %s", exc)

    # -- search -----------------------------------------------------------------------------

    def search(
        self,
        query: str,
        *,
        max_results: int | None = None,
        min_score: float | None = None,
        session_key: str | None = None,
        sources: Sequence[str] | None = None,
    ) -> list[MemorySearchResult]:
        self._check_open()
        text = bound_query(query, self.settings.query.max_chars)
        if not text:
            return []
        limit = max(1, max_results if max_results is not None else self.settings.query.max_results)
        floor = self.settings.query.min_score if min_score is None else min_score
        wanted = [s for s in (sources or self.settings.sources) if s in self.settings.sources]
        self._refresh_before_search()
        query_vector = None
        if self.index.vectors_usable(self.index.meta()):
            try:
                query_vector = self.query_vectors.embed(text)
                self.last_search_error = None
            except ProviderError as exc:
                self.last_search_error = f"query embedding failed: {exc}"
                log.warning("memwell lancedb: %s; keyword results only", self.last_search_error)
        found = self.index.search(
            text, query_vector, max_results=limit, min_score=floor, sources=wanted
        )
        return [
            MemorySearchResult(
                path=c.path,
                start_line=c.start_line,
                end_line=c.end_line,
                score=max(0.0, min(1.0, c.score)),
                snippet=truncate_snippet(c.text),
                source=c.source,
                citation=format_citation(c.path, c.start_line, c.end_line),
            )
            for c in found
        ]

    def content_version(self) -> str:
        """The versions of the chunks and files tables (a commit from any process moves them)
        and, with ``sync.on_search``, the files' stat fingerprint, since a search then syncs
        changed files first."""
        self._check_open()
        tables = [self.db.open(name) for name in (self.index.chunks_name, self.index.files_name)]
        parts = [str(t.version) if t is not None else "-" for t in tables]
        if self.settings.sync.on_search:
            parts.append(sha256_hex(repr(self.index.stat_fingerprint()))[:16])
        return ":".join(parts)

    def query_embedder(self) -> QueryVectors | None:
        """The query vectors this manager's searches use (``None`` in keyword-only mode)."""
        return self.query_vectors if self.runtime.provider is not None else None

    def warm(self) -> None:
        """Open the index tables and load the embedding model now."""
        self._refresh_before_search()
        self.db.open(self.index.chunks_name)
        if self.runtime.provider is not None:
            self.query_vectors.embed("warm-up")

    def read_file(
        self, rel_path: str, *, from_line: int | None = None, lines: int | None = None
    ) -> ReadFileResult:
        return read_memory_file(
            self.workspace,
            rel_path,
            from_line=from_line,
            lines=lines,
            extra_paths=self.settings.extra_paths,
            sessions_dir=readable_sessions_dir(
                self.workspace, self.settings.sessions_dir, self.settings.sources
            ),
        )

    # -- long-term memories: auto-recall and auto-capture -----------------------------------

    def recall_context(self, prompt: str) -> str | None:
        """The auto-recall block for ``prompt``: top 3 memories at >= 0.3, escaped, untrusted."""
        self._check_open()
        if len(prompt.strip()) < AUTO_RECALL_MIN_PROMPT or self.runtime.provider is None:
            return None
        hits = self.memories.recall(
            prompt, limit=AUTO_RECALL_LIMIT, min_score=AUTO_RECALL_MIN_SCORE
        )
        block = untrusted_block(
            [f"[{h.memory.category}] {h.memory.text}" for h in hits],
            max_chars=self.settings.query.max_injected_chars,
        )
        return block or None

    def capture_turn(
        self, messages: Sequence[TurnMessage], *, session_key: str | None = None
    ) -> list[tuple[CaptureDecision, str]]:
        """Auto-capture from a finished turn's user messages.

        Returns each user message's decision with its outcome: ``created``, ``duplicate``, or
        the rejection reason. Without a provider nothing is stored (``no_provider``).
        """
        self._check_open()
        decisions = select_captures(messages, max_chars=self.config.capture_max_chars)
        has_provider = self.runtime.provider is not None
        report: list[tuple[CaptureDecision, str]] = []
        for decision in decisions:
            if decision.reason is not None:
                report.append((decision, decision.reason))
                continue
            if not has_provider:
                report.append((decision, "no_provider"))
                continue
            category = detect_category(decision.text)
            try:
                outcome = self.memories.store(
                    decision.text,
                    importance=capture_importance(decision.text, category),
                    category=category,
                    session=session_key,
                )
            except MemoryRejected as exc:
                report.append((decision, exc.reason))
            else:
                report.append((decision, outcome.action))
        return report

    # -- status and probes ------------------------------------------------------------------

    def _provider_fields(self) -> dict[str, Any]:
        requested = self.settings.provider
        if not self.runtime.initialized:
            return {"provider": requested, "model": self.settings.model or None}
        if self.runtime.error is not None:
            return {
                "provider": requested,
                "model": self.settings.model or None,
                "search_mode": "disabled",
                "provider_unavailable_reason": str(self.runtime.error),
            }
        selection = self.runtime.selection()
        if selection.provider is None:
            return {
                "provider": "none",
                "model": FTS_ONLY_MODEL,
                "search_mode": "fts-only",
                "provider_unavailable_reason": selection.unavailable_reason,
            }
        return {
            "provider": selection.provider.id,
            "model": selection.provider.model,
            "provider_fallback": selection.fallback,
        }

    def status(self) -> MemoryStatus:
        self._check_open()
        meta = self.index.meta()
        counts, vector_count = self.index.counts()
        fields = self._provider_fields()
        usable = (
            "search_mode" in fields
            or not self.runtime.initialized
            or meta is None
            or self.index.vectors_usable(meta)
        )
        if not usable:
            fields["search_mode"] = "fts-only"
            fields["provider_unavailable_reason"] = (
                "index was built with another embedding model; reindex pending"
            )
        has_vectors = fields.get("search_mode") not in ("fts-only", "disabled")
        dirty = meta is None or (
            self._fingerprint is not None and self.index.stat_fingerprint() != self._fingerprint
        )
        memories: dict[str, Any] = {"count": None}
        if self.runtime.initialized and self.runtime.error is None and self.runtime.provider:
            try:
                memories = self.memories.stats()
            except Exception as exc:
                memories = {"count": None, "error": f"{type(exc).__name__}: {exc}"}
            if self.memories.recovery is not None:
                memories["rebuilt_from_journal"] = self.memories.recovery
        return MemoryStatus(
            backend=BACKEND_NAME,
            query_max_chars=self.settings.query.max_chars,
            requested_provider=self.settings.provider,
            files=sum(f for _, f, _ in counts),
            chunks=sum(c for _, _, c in counts),
            vectors=vector_count if has_vectors else None,
            dirty=dirty,
            workspace_dir=str(self.workspace),
            db_path=self.uri,
            extra_paths=list(self.settings.extra_paths),
            sources=list(self.settings.sources),
            source_counts=[SourceCount(source=s, files=f, chunks=c) for s, f, c in counts],
            fts=FtsStatus(
                enabled=self.settings.query.hybrid.enabled,
                available=meta is not None,
                tokenizer="lance-simple+cjk-bigrams",
            ),
            vector=VectorStatus(
                enabled=True,
                available=has_vectors,
                engine="lancedb-cosine",
                dims=(meta or {}).get("dims"),
            ),
            last_sync_error=self.last_sync_error or self.last_search_error,
            custom={
                "lancedb": {
                    "uri": self.uri,
                    "local": is_local_uri(self.uri),
                    "namespace": self.config.index_namespace or None,
                    "tables": [self.index.chunks_name, self.index.files_name, "memories"],
                },
                "memories": memories,
                "auto_recall": self.config.auto_recall,
                "auto_capture": self.config.auto_capture,
                "journal": str(self.journal.path) if self.journal is not None else None,
                "last_sync": vars(self.index.last_stats) if self.index.last_stats else None,
            },
            **fields,
        )

    def probe_embedding(self) -> ProbeResult:
        try:
            if self.runtime.provider is None:
                reason = self.runtime.selection().unavailable_reason
                return ProbeResult(ok=False, error=reason or "no embedding provider (FTS-only)")
            self.runtime.embed_documents(["ping"])
            return ProbeResult(ok=True)
        except Exception as exc:
            return ProbeResult(ok=False, error=f"{type(exc).__name__}: {exc}")

    def probe_vector(self) -> ProbeResult:
        try:
            self.db.table_names()
            if self.runtime.provider is None:
                return ProbeResult(ok=False, error="no embedding provider (FTS-only mode)")
            return ProbeResult(ok=True)
        except Exception as exc:
            return ProbeResult(ok=False, error=f"{type(exc).__name__}: {exc}")

    def close(self) -> None:
        if self.closed:
            return
        self.closed = True
        with self._sync_lock:
            self.db.close()


def as_lance_manager(manager: object) -> LanceMemoryManager | None:
    """The open LanceDB manager behind ``manager`` (itself, or the manager serving behind the
    recall cache and fallback wrapper ``open_memory`` puts around it), or ``None``."""
    manager = unwrap(manager)
    if isinstance(manager, LanceMemoryManager) and not manager.closed:
        return manager
    return None
