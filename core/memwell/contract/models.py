"""Records exchanged between the core, backends and callers
(:class:`~memwell.contract.records.Record`)."""

from __future__ import annotations

import operator
from typing import Any, ClassVar, Literal

import msgspec

from memwell.contract.layout import VAULT_PREFIX
from memwell.contract.records import Record

SearchMode = Literal["hybrid", "fts-only", "vector-only", "file-scan", "disabled"]
"""``file-scan``: no usable keyword index, so the Markdown files themselves are scanned."""


# mypy's dataclass rule refuses a frozen subclass of a mutable base; msgspec allows it.
class MemorySearchResult(Record, frozen=True, kw_only=True):  # type: ignore[misc]
    """One search hit with exact provenance.

    ``path`` is workspace-relative with ``/`` separators; lines are 1-based and inclusive
    (for session transcripts they are lines of the JSONL file); ``score`` is in [0, 1],
    higher is better. Immutable and hashable.

    ``pinned`` is true for a hit in the vault (``memory/vault/``: the user pinned it, it never
    decays); construction sets it from ``path`` and ``source``.

    Construction checks the lines and the score (backends, third-party ones included, build
    these): a ``ValueError`` names a bad one. Integer-like lines and number-like scores (NumPy
    scalars, an ``int`` score) are stored as ``int`` and ``float``.
    """

    path: str
    start_line: int
    end_line: int
    score: float
    snippet: str
    source: str = "memory"
    citation: str | None = None
    pinned: bool = False

    def __post_init__(self) -> None:
        if self.source == "memory" and self.path.replace("\\", "/").startswith(VAULT_PREFIX):
            msgspec.structs.force_setattr(self, "pinned", True)
        start, end, score = self.start_line, self.end_line, self.score
        if type(start) is not int or type(end) is not int or type(score) is not float:
            start, end, score = _plain_int(start), _plain_int(end), _plain_float(score)
            msgspec.structs.force_setattr(self, "start_line", start)
            msgspec.structs.force_setattr(self, "end_line", end)
            msgspec.structs.force_setattr(self, "score", score)
        if start < 1 or end < 1:
            raise ValueError(f"search result {self.path!r}: lines are 1-based, got {start}-{end}")
        if not 0.0 <= score <= 1.0:
            raise ValueError(f"search result {self.path!r}: score {score!r} is not in [0, 1]")


def _plain_int(value: Any) -> int:
    if isinstance(value, bool):
        raise ValueError(f"a line number must be an integer, got {value!r}")
    try:
        return operator.index(value)
    except TypeError:
        raise ValueError(f"a line number must be an integer, got {value!r}") from None


def _plain_float(value: Any) -> float:
    if isinstance(value, (bool, str, bytes)):
        raise ValueError(f"a score must be a number, got {value!r}")
    try:
        return float(value)
    except (TypeError, ValueError):
        raise ValueError(f"a score must be a number, got {value!r}") from None


class ReadFileResult(Record, kw_only=True):
    """Text returned by ``read_file``; a missing file gives empty text and ``missing``."""

    dump_exclude: ClassVar[frozenset[str]] = frozenset({"missing"})

    path: str
    text: str
    missing: bool = False
    """The file does not exist (not serialised: payloads keep their ``path``/``text`` shape)."""


class ProbeResult(Record, kw_only=True):
    """Outcome of an availability probe."""

    ok: bool
    error: str | None = None


class SyncProgress(Record, kw_only=True):
    """Progress reported while indexing: files done of ``total``, and chunks written so far
    of ``total_chunks`` (0 when the backend does not count chunks)."""

    completed: int
    total: int
    label: str | None = None
    chunks: int = 0
    total_chunks: int = 0


class SourceCount(Record, kw_only=True):
    source: str
    files: int
    chunks: int


class CacheStatus(Record, kw_only=True):
    enabled: bool
    entries: int = 0
    max_entries: int | None = None


class RecallTierStatus(Record, kw_only=True):
    hits: int = 0
    misses: int = 0


class RecallCacheStatus(Record, kw_only=True):
    """The recall cache in front of the backend: tiers' counters and bounds.

    ``enabled`` is false when settings turn it off or the backend gives no content version
    (``reason`` says which); ``semantic`` is ``None`` while that tier is off (``semantic_off``
    says why), and so is ``temporal``. Counters are per process.
    """

    enabled: bool
    reason: str | None = None
    entries: int = 0
    bytes: int = 0
    max_entries: int = 0
    max_bytes: int = 0
    evictions: int = 0
    invalidations: int = 0
    exact: RecallTierStatus = msgspec.field(default_factory=RecallTierStatus)
    semantic: RecallTierStatus | None = None
    semantic_off: str | None = None
    temporal: RecallTierStatus | None = None
    """The tier for questions about recent events; ``None`` while it or the semantic tier
    is off."""
    backend_searches: int = 0
    batch_shared: int = 0
    """Queries of a batch answered by the retrieval of a near-duplicate in the same batch."""
    stale_served: int = 0
    """Stale answers returned at once by ``async_search(..., stale_ok=True)`` (each one
    refreshed in the background)."""


class RecallTrackingStatus(Record, kw_only=True):
    """The sidecar in ``status()``: where it is, how many chunks it tracks, the last error."""

    enabled: bool
    path: str
    entries: int = 0
    promoted: int = 0
    error: str | None = None


class FtsStatus(Record, kw_only=True):
    enabled: bool
    available: bool
    tokenizer: str = "unicode61"
    error: str | None = None


class VectorStatus(Record, kw_only=True):
    enabled: bool
    available: bool
    engine: str | None = None
    extension_path: str | None = None
    load_error: str | None = None
    dims: int | None = None


class FallbackStatus(Record, kw_only=True):
    """Records a switch: from what, to what, and why."""

    from_: str = msgspec.field(name="from")
    """Dumped as ``from`` with ``by_alias=True``; ``model_validate`` reads ``from``."""
    to: str | None = None
    reason: str


class SearchDegradation(Record, kw_only=True):
    """A search that ran in a lesser mode than configured: the mode it used, and why."""

    mode: SearchMode
    reason: str


class MemoryStatus(Record, kw_only=True):
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
    extra_paths: list[str] = msgspec.field(default_factory=list)
    sources: list[str] = msgspec.field(default_factory=lambda: ["memory"])
    source_counts: list[SourceCount] = msgspec.field(default_factory=list)
    cache: CacheStatus | None = None
    recall_cache: RecallCacheStatus | None = None
    recall_tracking: RecallTrackingStatus | None = None
    fts: FtsStatus | None = None
    vector: VectorStatus | None = None
    fallback: FallbackStatus | None = None
    provider_fallback: FallbackStatus | None = None
    degraded: SearchDegradation | None = None
    last_sync_error: str | None = None
    unreadable: list[str] = msgspec.field(default_factory=list)
    """Memory files or directories the last sync could not read (each with the reason)."""
    custom: dict[str, Any] = msgspec.field(default_factory=dict)
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
