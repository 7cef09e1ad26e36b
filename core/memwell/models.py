"""Pydantic models exchanged between the core, backends and callers."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

SearchMode = Literal["hybrid", "fts-only", "vector-only", "file-scan", "disabled"]
"""``file-scan``: no usable keyword index, so the Markdown files themselves are scanned."""


class MemorySearchResult(BaseModel):
    """One search hit with exact provenance.

    ``path`` is workspace-relative with ``/`` separators; lines are 1-based and inclusive
    (for session transcripts they are lines of the JSONL file); ``score`` is in [0, 1],
    higher is better.
    """

    model_config = ConfigDict(frozen=True)

    path: str
    start_line: int = Field(ge=1)
    end_line: int = Field(ge=1)
    score: float = Field(ge=0.0, le=1.0)
    snippet: str
    source: str = "memory"
    citation: str | None = None


class ReadFileResult(BaseModel):
    """Text returned by ``read_file``; a missing file gives empty text and ``missing``."""

    path: str
    text: str
    missing: bool = Field(default=False, exclude=True)
    """The file does not exist (not serialised: payloads keep their ``path``/``text`` shape)."""


class ProbeResult(BaseModel):
    """Outcome of an availability probe."""

    ok: bool
    error: str | None = None


class SyncProgress(BaseModel):
    """Progress reported while indexing: files done of ``total``, and chunks written so far
    of ``total_chunks`` (0 when the backend does not count chunks)."""

    completed: int
    total: int
    label: str | None = None
    chunks: int = 0
    total_chunks: int = 0


class SourceCount(BaseModel):
    source: str
    files: int
    chunks: int


class CacheStatus(BaseModel):
    enabled: bool
    entries: int = 0
    max_entries: int | None = None


class RecallTierStatus(BaseModel):
    hits: int = 0
    misses: int = 0


class RecallCacheStatus(BaseModel):
    """The recall cache in front of the backend: tiers' counters and bounds.

    ``enabled`` is false when settings turn it off or the backend gives no content version
    (``reason`` says which); ``semantic`` is ``None`` while that tier is off (``semantic_off``
    says why). Counters are per process.
    """

    enabled: bool
    reason: str | None = None
    entries: int = 0
    bytes: int = 0
    max_entries: int = 0
    max_bytes: int = 0
    evictions: int = 0
    invalidations: int = 0
    exact: RecallTierStatus = Field(default_factory=RecallTierStatus)
    semantic: RecallTierStatus | None = None
    semantic_off: str | None = None
    backend_searches: int = 0


class RecallTrackingStatus(BaseModel):
    """The sidecar in ``status()``: where it is, how many chunks it tracks, the last error."""

    enabled: bool
    path: str
    entries: int = 0
    promoted: int = 0
    error: str | None = None


class FtsStatus(BaseModel):
    enabled: bool
    available: bool
    tokenizer: str = "unicode61"
    error: str | None = None


class VectorStatus(BaseModel):
    enabled: bool
    available: bool
    engine: str | None = None
    extension_path: str | None = None
    load_error: str | None = None
    dims: int | None = None


class FallbackStatus(BaseModel):
    """Records a switch: from what, to what, and why."""

    from_: str = Field(alias="from")
    to: str | None = None
    reason: str

    model_config = ConfigDict(populate_by_name=True)


class SearchDegradation(BaseModel):
    """A search that ran in a lesser mode than configured: the mode it used, and why."""

    mode: SearchMode
    reason: str


class MemoryStatus(BaseModel):
    """A snapshot of a manager's state; every backend fills what applies to it."""

    backend: str
    provider: str
    model: str | None = None
    requested_provider: str | None = None
    search_mode: SearchMode = "hybrid"
    provider_unavailable_reason: str | None = None
    files: int = 0
    chunks: int = 0
    vectors: int | None = None
    dirty: bool = False
    workspace_dir: str
    db_path: str | None = None
    extra_paths: list[str] = Field(default_factory=list)
    sources: list[str] = Field(default_factory=lambda: ["memory"])
    source_counts: list[SourceCount] = Field(default_factory=list)
    cache: CacheStatus | None = None
    recall_cache: RecallCacheStatus | None = None
    recall_tracking: RecallTrackingStatus | None = None
    fts: FtsStatus | None = None
    vector: VectorStatus | None = None
    fallback: FallbackStatus | None = None
    provider_fallback: FallbackStatus | None = None
    degraded: SearchDegradation | None = None
    last_sync_error: str | None = None
    unreadable: list[str] = Field(default_factory=list)
    """Memory files or directories the last sync could not read (each with the reason)."""
    custom: dict[str, Any] = Field(default_factory=dict)
    #: Queries longer than this are cut to it before searching (``query.max_chars``).
    query_max_chars: int | None = None

    @property
    def integrity_ok(self) -> bool:
        """True when every chunk has a vector (or vectors are not in use)."""
        return (
            self.vectors is None
            or self.search_mode in ("fts-only", "file-scan")
            or self.vectors == self.chunks
        )
