"""``LanceMemoryManager``: the ``lancedb`` backend's :class:`~memwell.MemorySearchManager`.

It serves ``memory_search``/``memory_get`` over the workspace's Markdown (the document index)
and owns the long-term ``memories`` table used by ``memory_store``/``memory_recall``/
``memory_forget``, auto-recall and auto-capture.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

from memwell.plugin import (
    REINDEX_PENDING,
    BackendContext,
    Candidate,
    FtsStatus,
    MemoryBackend,
    ProbeResult,
    ProgressCallback,
    ProviderError,
    QueryVectors,
    SearchRequest,
    SourceCount,
    TurnMessage,
    VectorStatus,
    sha256_hex,
    untrusted_block,
    unwrap,
)

from .capture import CaptureDecision, capture_importance, detect_category, select_captures
from .config import LanceConfig, is_local_uri, resolve_uri
from .db import LanceDatabase
from .index import DocumentIndex
from .journal import Journal
from .store import MemoryRejected, MemoryStore

log = logging.getLogger(__name__)

BACKEND_NAME = "lancedb"
AUTO_RECALL_LIMIT = 3
AUTO_RECALL_MIN_SCORE = 0.3
AUTO_RECALL_MIN_PROMPT = 5


class LanceMemoryManager(MemoryBackend):
    """Markdown memory and long-term memories in one LanceDB database (local or remote)."""

    name = BACKEND_NAME
    supported_sources = frozenset({"memory", "sessions"})

    def __init__(self, ctx: BackendContext, config: LanceConfig | None = None) -> None:
        super().__init__(ctx)
        self.config = config or LanceConfig()
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
        self.last_search_error: str | None = None

    # -- sync -------------------------------------------------------------------------------

    def _sync(self, *, reason: str, force: bool, progress: ProgressCallback | None) -> None:
        """Index new and changed files, drop vanished ones; ``force`` rebuilds everything."""
        fingerprint = self.index.stat_fingerprint()
        stats = self.index.sync(force=force, progress=progress)
        self._fingerprint = fingerprint
        log.info("memwell lancedb sync (%s): %s", reason, stats)

    def _sync_before_search(self, session_key: str | None) -> None:
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

    def _search(self, request: SearchRequest) -> list[Candidate]:
        query_vector = None
        if self.index.vectors_usable(self.index.meta()):
            try:
                query_vector = self.query_vectors.embed(request.query)
                self.last_search_error = None
            except ProviderError as exc:
                self.last_search_error = f"query embedding failed: {exc}"
                log.warning("memwell lancedb: %s; keyword results only", self.last_search_error)
        return self.index.search(request, query_vector)

    def content_version(self) -> str:
        """The versions of the chunks and files tables (a commit from any process moves them)
        and, with ``sync.on_search``, the files' stat fingerprint, since a search then syncs
        changed files first."""
        self.check_open()
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
        self._sync_before_search(None)
        self.db.open(self.index.chunks_name)
        if self.runtime.provider is not None:
            self.query_vectors.warm()

    # -- long-term memories: auto-recall and auto-capture -----------------------------------

    def recall_context(self, prompt: str) -> str | None:
        """The auto-recall block for ``prompt``: top 3 memories at >= 0.3, escaped, untrusted."""
        self.check_open()
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
        self.check_open()
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

    def _index_status(self) -> dict[str, Any]:
        self.check_open()
        meta = self.index.meta()
        counts, vector_count = self.index.counts()
        fields = self.provider_fields(select=False)  # status loads no model
        usable = meta is None or self.index.vectors_usable(meta)
        if fields.get("search_mode") in ("hybrid", "vector-only") and not usable:
            fields["search_mode"] = "fts-only"
            fields["provider_unavailable_reason"] = REINDEX_PENDING
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
        return dict(
            files=sum(f for _, f, _ in counts),
            chunks=sum(c for _, _, c in counts),
            vectors=vector_count if has_vectors else None,
            dirty=dirty,
            db_path=self.uri,
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

    def _probe_vector_store(self) -> ProbeResult:
        self.db.table_names()
        return ProbeResult(ok=True)

    def _close(self) -> None:
        self.wait_for_sync()
        self.db.close()


def as_lance_manager(manager: object) -> LanceMemoryManager | None:
    """The open LanceDB manager behind ``manager`` (itself, or the manager serving behind the
    recall cache and fallback wrapper ``open_memory`` puts around it), or ``None``."""
    manager = unwrap(manager)
    if isinstance(manager, LanceMemoryManager) and not manager.closed:
        return manager
    return None
