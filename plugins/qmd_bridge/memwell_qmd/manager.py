""":class:`QmdMemoryManager`: memwell's ``MemorySearchManager`` on top of the qmd CLI.

It is built in layers: :class:`~memwell_qmd.updates.QmdUpdates` keeps qmd's index up to date,
:class:`~memwell_qmd.searching.QmdSearching` searches it, and the manager starts both and
answers the :class:`~memwell.runtime.backend.MemoryBackend` hooks (sync, search, reads, status,
probes, close).
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from memwell.plugin import (
    BackendContext,
    BackendUnavailableError,
    Candidate,
    FtsStatus,
    PathNotAllowedError,
    ProbeResult,
    ProgressCallback,
    ReadFileResult,
    SearchMode,
    SearchRequest,
    SourceCount,
    SyncProgress,
    VectorStatus,
    read_memory_file,
)

from .backoff import Backoff
from .command import check_version
from .config import BACKEND_NAME, QmdConfig
from .errors import QmdError
from .process import StartupRunner
from .searching import SOURCE, QmdSearching, rescue_keywords

__all__ = ["Backoff", "QmdMemoryManager", "rescue_keywords"]

SEARCH_WAIT_SECONDS = 0.5
_STATUS_MODES: Mapping[str, SearchMode] = {
    "search": "fts-only",
    "vsearch": "vector-only",
    "query": "hybrid",
}


class QmdMemoryManager(QmdSearching):
    """Searches Markdown memory through an isolated qmd index.

    On creation it checks ``qmd --version``, pins the configured models, reconciles the
    collections and starts the boot update (in the background unless ``wait_for_boot_sync``)
    and the update timer. ``purpose="status"`` does none of that: it only reads.

    Every qmd call runs with a timeout and leaves no process behind. Errors are raised as
    :class:`~memwell_qmd.errors.QmdError` so a :class:`memwell.FallbackMemoryManager` can
    switch to the builtin backend; background update and embed failures are logged, shown in
    :meth:`status` and retried later.

    qmd embeds with its own models, so the embedding runtime of ``ctx`` is not used.
    """

    name = BACKEND_NAME
    default_min_score = 0.0
    """qmd's scores differ by mode and BM25 often rounds to 0 on small corpora, so the
    builtin default of 0.35 does not apply here."""

    def __init__(self, ctx: BackendContext, config: QmdConfig | None = None) -> None:
        config = config or QmdConfig()
        super().__init__(ctx, config)
        self.snippet_chars = config.max_snippet_chars
        self.version: str | None = None
        startup = StartupRunner(self.runner, config.timeouts.startup)
        try:
            self.version = check_version(startup, self.runner.argv, config.timeouts.collection)
            if self.purpose == "status":
                known = self.state.read_collections()
                self._present = {spec.name for spec in self.collections if spec.name in known}
                return
            with self._lock:
                manifest = self.state.read_manifest()
                self.state.pin_models(self._pinned, set(manifest.get("pinned_models", [])))
                manifest["pinned_models"] = sorted(self._pinned)
                self.state.write_manifest(manifest)
                self._reconcile(startup)
            self._start_background()
        except BaseException:
            self.close()
            raise

    # -- search -----------------------------------------------------------------------------

    def _sync_before_search(self, session_key: str | None) -> None:
        """A search waits briefly for a running update; it never runs one itself."""
        with self._cond:
            self._cond.wait_for(lambda: not self._updating, timeout=SEARCH_WAIT_SECONDS)

    def _search(self, request: SearchRequest) -> list[Candidate]:
        """Search the managed collections present."""
        names = [spec.name for spec in self.collections if spec.name in self._present]
        query = request.query.replace("\x00", " ").strip()
        if not names or not query:
            return []
        hits = self._search_hits(query, request.limit, request.min_score, names)
        return self._candidates(hits, request.min_score)[: request.limit]

    def content_version(self) -> str | None:
        """Changes when qmd's index changes: the stat of its SQLite file and write-ahead log
        (any ``qmd update`` or ``qmd embed``, from any process), this manager's last update
        and embed, the collections present and the mode the next search runs in. ``None``
        (no caching) when qmd keeps its index somewhere else."""
        if not self.state.db_path.is_file():
            return None
        parts = [
            ",".join(sorted(self._present)),
            repr(self._wanted_mode()),
            f"{self._last_update_at}:{self._last_embed_at}",
        ]
        for path in (self.state.db_path, Path(f"{self.state.db_path}-wal")):
            try:
                st = path.stat()
            except OSError:
                parts.append("-")
                continue
            parts.append(f"{st.st_ino}:{st.st_mtime_ns}:{st.st_size}")
        return "|".join(parts)

    # -- read_file, status, probes, sync, close ---------------------------------------------

    def read_file(
        self, rel_path: str, *, from_line: int | None = None, lines: int | None = None
    ) -> ReadFileResult:
        """Read a memory file: ``qmd/<collection>/<rest>`` inside that collection, anything
        else by the core's safe-read rules (memory files plus the extra collections)."""
        raw = rel_path.strip()
        if raw.startswith("qmd/"):
            parts = raw.split("/", 2)
            if len(parts) < 3 or not parts[2]:
                raise PathNotAllowedError(f"path not allowed: incomplete qmd path: {raw}")
            spec = self._by_name.get(parts[1])
            if spec is None:
                raise PathNotAllowedError(f"path not allowed: unknown qmd collection: {parts[1]}")
            found = read_memory_file(
                spec.root, parts[2], from_line=from_line, lines=lines, extra_paths=[str(spec.scope)]
            )
            display = f"qmd/{spec.name}/{found.path}"
            return ReadFileResult(path=display, text=found.text, missing=found.missing)
        extras = [str(spec.scope) for spec in self.collections if not spec.default]
        return read_memory_file(
            self.workspace, raw, from_line=from_line, lines=lines, extra_paths=extras
        )

    def provider_fields(self, *, select: bool = True) -> dict[str, Any]:
        """qmd is the provider: its embed model and the mode the next search runs in."""
        mode, reason = self._wanted_mode()
        return {
            "provider": BACKEND_NAME,
            "model": self.models["embed"] if self.vectors_wanted else None,
            "requested_provider": BACKEND_NAME,
            "search_mode": _STATUS_MODES[mode],
            "provider_unavailable_reason": reason,
        }

    def _index_status(self) -> dict[str, Any]:
        """qmd's counts come from the last ``qmd status`` (run now if none yet)."""
        info = self._status_info or self._refresh_status()
        files = sum(info.collection_files.get(name, 0) for name in self._present)
        mode, reason = self._wanted_mode()
        return dict(
            files=files,
            chunks=files,
            vectors=max(0, files - info.pending) if self.vectors_wanted else None,
            dirty=self._update_failed,
            db_path=str(self.state.db_path),
            source_counts=[SourceCount(source=SOURCE, files=files, chunks=files)],
            fts=FtsStatus(enabled=True, available=True, tokenizer="qmd-bm25"),
            vector=VectorStatus(
                enabled=self.vectors_wanted, available=info.vectors > 0, engine="qmd"
            ),
            custom={
                "qmd": {
                    "version": self.version,
                    "command": self.runner.argv,
                    "state_dir": str(self.state.root),
                    "configured_mode": self.config.search_mode,
                    "effective_mode": mode,
                    "mode_fallback": reason,
                    "last_search_mode": self._effective_mode,
                    "last_search_fallback": self._mode_fallback,
                    "collections": [
                        {
                            "name": spec.name,
                            "path": str(spec.root),
                            "pattern": spec.pattern,
                            "present": spec.name in self._present,
                            "files": info.collection_files.get(spec.name, 0),
                        }
                        for spec in self.collections
                    ],
                    "models": dict(self.models),
                    "total_documents": info.total,
                    "vectors": info.vectors,
                    "pending_embeddings": info.pending,
                    "last_update_at": self._last_update_at,
                    "last_embed_at": self._last_embed_at,
                    "embed_backoff": self._embed_backoff.snapshot(),
                    "mode_backoff": self._mode_backoff.snapshot(),
                }
            },
        )

    def probe_vector(self) -> ProbeResult:
        """Runs ``qmd status``: vectors are available once qmd has embedded something."""
        try:
            info = self._refresh_status()
        except QmdError as exc:
            return ProbeResult(ok=False, error=str(exc))
        if info.vectors > 0:
            return ProbeResult(ok=True)
        return ProbeResult(ok=False, error="qmd has no vectors yet (run sync in a vector mode)")

    def probe_embedding(self) -> ProbeResult:
        """The embed model must be usable offline; then as :meth:`probe_vector`."""
        problems = self._missing_models("embed")
        if problems:
            return ProbeResult(ok=False, error="; ".join(problems.values()))
        return self.probe_vector()

    def describe_sync_error(self, exc: Exception) -> str:
        """The update's own description (``update: ...``) when it gave one."""
        return self.last_sync_error or super().describe_sync_error(exc)

    def _sync(self, *, reason: str, force: bool, progress: ProgressCallback | None) -> None:
        """Run ``qmd update`` now, then ``qmd embed`` when vectors are in use and it is due
        (always when ``force``). Waits for an update already running, then runs its own."""
        if self.purpose == "status":
            raise BackendUnavailableError("a status-only qmd manager cannot sync")
        self._run_update(reason, automatic=False, force_embed=force)
        if progress is not None:
            progress(SyncProgress(completed=1, total=1, label="qmd update"))

    def _close(self) -> None:
        """Stop the timers, kill running qmd calls and wait for the background threads."""
        with self._cond:
            self._cond.notify_all()
        self._stop.set()
        runner = getattr(self, "runner", None)
        if runner is not None:
            runner.stop()
        for thread in self._threads:
            if thread is not threading.current_thread():
                thread.join(timeout=10)
