""":class:`QmdMemoryManager`: memwell's ``MemorySearchManager`` on top of the qmd CLI."""

from __future__ import annotations

import contextlib
import logging
import os
import re
import shutil
import sqlite3
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any
from urllib.parse import unquote

from memwell.backend import MemoryBackend, SearchRequest
from memwell.descriptors import BackendContext
from memwell.errors import BackendUnavailableError, PathNotAllowedError
from memwell.manager import ProgressCallback
from memwell.models import (
    FtsStatus,
    ProbeResult,
    ReadFileResult,
    SearchMode,
    SourceCount,
    SyncProgress,
    VectorStatus,
)
from memwell.retrieval.candidate import Candidate
from memwell.retrieval.snippets import truncate_snippet
from memwell.retrieval.stopwords import ALL_STOPWORDS
from memwell.sources.paths import read_memory_file

from .collections import CollectionSpec, desired_collections, reconcile
from .config import BACKEND_NAME, QmdConfig, SearchModeName
from .errors import (
    QmdBusy,
    QmdCollectionMissing,
    QmdConfigError,
    QmdError,
    QmdIndexCorrupt,
    QmdModelUnavailable,
    QmdNotInstalled,
    QmdTimeout,
    QmdUnsupportedFlag,
)
from .modelfiles import DEFAULT_MODELS, ENV_VARS, ROLES, missing_models, resolve_model
from .parsing import QmdHit, QmdStatusInfo, parse_search_output, parse_status, parse_version
from .process import CommandRunner, QmdRunner, StartupRunner
from .state import QmdState

log = logging.getLogger(__name__)

SOURCE = "memory"
PINNED_VERSION = (2, 8)
SEARCH_WAIT_SECONDS = 0.5
BOOT_ATTEMPTS = 3
BACKOFF_BASE_SECONDS = 60.0
BACKOFF_CAP_SECONDS = 3600.0
MAX_RESCUE_KEYWORDS = 8
_EMBED_SKIPPED = "Another embed process is already running"
_WORD = re.compile(r"\w+")
_DROPPED_ENV = frozenset({"CI", "INDEX_PATH", "HOME", "XDG_CONFIG_HOME", "XDG_CACHE_HOME"})
_STATUS_MODES: Mapping[str, SearchMode] = {
    "search": "fts-only",
    "vsearch": "vector-only",
    "query": "hybrid",
}


class Backoff:
    """Exponential backoff after failures: ``base * 2**(n-1)`` seconds, capped."""

    def __init__(
        self,
        base: float = BACKOFF_BASE_SECONDS,
        cap: float = BACKOFF_CAP_SECONDS,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.base = base
        self.cap = cap
        self.clock = clock
        self.failures = 0
        self.until = 0.0
        self.last_error: str | None = None

    def active(self) -> bool:
        return self.clock() < self.until

    def fail(self, error: str) -> None:
        self.failures += 1
        self.until = self.clock() + min(self.cap, self.base * 2 ** (self.failures - 1))
        self.last_error = error

    def reset(self) -> None:
        self.failures = 0
        self.until = 0.0
        self.last_error = None

    def snapshot(self) -> dict[str, Any]:
        return {
            "failures": self.failures,
            "seconds_left": round(max(0.0, self.until - self.clock()), 1),
            "last_error": self.last_error,
        }


def rescue_keywords(query: str) -> list[str]:
    """Distinct keywords of ``query``: no stop words, digits or ASCII words under 3 letters."""
    keywords: list[str] = []
    for word in _WORD.findall(query.lower()):
        short = word.isascii() and word.isalpha() and len(word) < 3
        if word in ALL_STOPWORDS or word.isdigit() or short or word in keywords:
            continue
        keywords.append(word)
    return keywords[:MAX_RESCUE_KEYWORDS]


def shared_models_dir() -> Path:
    """The user's own qmd model cache (``$XDG_CACHE_HOME/qmd/models``)."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(Path.home(), ".cache")
    return Path(base) / "qmd" / "models"


def _within(path: str, root: str) -> bool:
    return os.path.commonpath([path, root]) == root


class QmdMemoryManager(MemoryBackend):
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
        super().__init__(ctx)  # self._lock serialises update, embed and collection changes
        self.workspace = Path(os.path.abspath(ctx.workspace))
        self.config = config = config or QmdConfig()
        settings, purpose = self.settings, self.purpose
        self.snippet_chars = config.max_snippet_chars
        self.state = QmdState(Path(os.path.abspath(self.workspace / settings.index_dir)) / "qmd")
        self.collections = desired_collections(
            self.workspace,
            config.collections,
            settings.extra_paths,
            include_default_memory=config.include_default_memory,
        )
        self._by_name = {spec.name: spec for spec in self.collections}
        configured = {role: getattr(config.models, role) for role in ROLES}
        self._pinned = {
            role: resolve_model(uri, self.workspace) for role, uri in configured.items() if uri
        }
        self.models = {role: self._pinned.get(role, DEFAULT_MODELS[role]) for role in ROLES}
        self.version: str | None = None
        self._cond = threading.Condition()
        self._updating = False
        self._update_failed = False
        self._last_update_mono: float | None = None
        self._last_update_at: float | None = None
        self._last_embed_mono: float | None = None
        self._last_embed_at: float | None = None
        self._embed_backoff = Backoff()
        self._mode_backoff = Backoff()
        self._mode_fallback: str | None = None
        self._effective_mode: SearchModeName = config.search_mode
        self._present: set[str] = set()
        self._missing: list[str] = []
        self._docids: dict[str, list[tuple[str, str]]] = {}
        self._status_info: QmdStatusInfo | None = None
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []

        self.state.prepare(shared_models_dir())
        self.runner = QmdRunner(
            self._resolve_argv(),
            cwd=self.state.working_dir(),
            env=self._child_env,
            max_output_bytes=config.max_output_bytes,
        )
        startup = StartupRunner(self.runner, config.timeouts.startup)
        try:
            self.version = self._check_version(startup)
            if purpose == "status":
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

    # -- process plumbing -------------------------------------------------------------------

    def _resolve_argv(self) -> list[str]:
        argv = self.config.argv
        program = os.path.expanduser(argv[0])
        if os.sep in program:
            program = os.path.normpath(os.path.join(self.workspace, program))
        else:
            found = shutil.which(program)
            if found is None:
                raise QmdNotInstalled(
                    f"qmd command {program!r} not found on PATH (install it with "
                    "plugins/qmd_bridge/scripts/install_qmd.sh and set MEMWELL_QMD_COMMAND)"
                )
            program = found
        return [program, *argv[1:]]

    def _child_env(self, timeout: float) -> dict[str, str]:
        """The environment of a qmd call: isolated state, never ``CI`` or ``INDEX_PATH``."""
        env = {
            key: value
            for key, value in os.environ.items()
            if key not in _DROPPED_ENV and not key.startswith("QMD_")
        }
        env.update(
            HOME=str(self.state.home),
            XDG_CONFIG_HOME=str(self.state.config_home),
            XDG_CACHE_HOME=str(self.state.cache_home),
            QMD_CONFIG_DIR=str(self.state.config_dir),
            NO_COLOR="1",
            # a locked index should fail inside our timeout, not wait qmd's default 120 s
            QMD_SQLITE_BUSY_TIMEOUT=str(int(min(30.0, max(0.1, timeout / 2)) * 1000)),
        )
        for role, uri in self._pinned.items():
            env[ENV_VARS[role]] = uri
        if self.config.force_cpu:
            env["QMD_FORCE_CPU"] = "1"
        return env

    def _check_version(self, runner: CommandRunner) -> str:
        out = runner.run(["--version"], timeout=self.config.timeouts.collection)
        version = parse_version(out.stdout + out.stderr)
        if version is None:
            raise QmdNotInstalled(
                f"{self.runner.argv!r} does not look like qmd: --version printed "
                f"{(out.stdout + out.stderr).strip()[:200]!r}"
            )
        text = ".".join(map(str, version))
        if version[:2] != PINNED_VERSION:
            log.warning("qmd %s found; memwell-qmd is tested with qmd 2.8.x", text)
        return text

    # -- collections, update and embed ------------------------------------------------------

    def _reconcile(self, runner: CommandRunner | None = None) -> None:
        with self._lock:
            manifest = self.state.read_manifest()
            present, missing = reconcile(
                runner or self.runner,
                self.state,
                self.collections,
                owned=set(manifest.get("collections", [])),
                timeout=self.config.timeouts.collection,
                add_timeout=self.config.timeouts.update,
            )
            self._present, self._missing = present, missing
            manifest["collections"] = sorted(present)
            self.state.write_manifest(manifest)
            self._docids.clear()

    def _repair_collections(self) -> None:
        """Remove and re-add every managed collection (qmd's duplicate-document repair)."""
        with self._lock:
            for name in sorted(self._present):
                with contextlib.suppress(QmdCollectionMissing):
                    self.runner.run(
                        ["collection", "remove", name], timeout=self.config.timeouts.collection
                    )
            self._reconcile()

    def _start_background(self) -> None:
        if self.config.update_on_boot:
            if self.config.wait_for_boot_sync:
                self._run_update("boot", automatic=False)
            else:
                self._spawn(self._background_update, "boot")
        interval = self.config.update_interval_minutes * 60
        if interval > 0:
            self._spawn(self._interval_loop, interval)

    def _spawn(self, target: Callable[..., None], *args: Any) -> None:
        thread = threading.Thread(target=target, args=args, daemon=True, name="memwell-qmd")
        self._threads.append(thread)
        thread.start()

    def _interval_loop(self, interval: float) -> None:
        while not self._stop.wait(interval):
            self._background_update("interval")

    def _background_update(self, reason: str) -> None:
        try:
            self._run_update(reason, automatic=True)
        except Exception as exc:
            if not self.closed:
                log.warning("qmd %s update failed: %s", reason, exc)

    def _run_update(self, reason: str, *, automatic: bool, force_embed: bool = False) -> None:
        """Run ``qmd update``, then ``qmd embed`` if due (always with ``force_embed``).

        An automatic run (boot, timer) is skipped while another update runs or within
        ``debounce_seconds`` of the last successful one. An explicit run waits for a running
        update and then runs anyway, so it always sees the files as they are now.
        """
        with self._cond:
            if automatic and self._updating:
                return
            self._cond.wait_for(lambda: not self._updating)
            self.check_open()
            if (
                automatic
                and self._last_update_mono is not None
                and time.monotonic() - self._last_update_mono < self.config.debounce_seconds
            ):
                log.debug("qmd update (%s) skipped: debounced", reason)
                return
            self._updating = True
        failed = True
        try:
            self._update_once(reason, force_embed)
            failed = False
        except BaseException as exc:
            self.last_sync_error = f"update: {exc}"
            raise
        finally:
            with self._cond:
                self._updating = False
                self._update_failed = failed
                self._cond.notify_all()

    def _update_once(self, reason: str, force_embed: bool) -> None:
        with self._lock:
            if self._missing and any(self._by_name[n].root.is_dir() for n in self._missing):
                self._reconcile()
            self._qmd_update(BOOT_ATTEMPTS if reason == "boot" else 1)
            self._last_update_mono = time.monotonic()
            self._last_update_at = time.time()
            self.last_sync_error = None
            self._docids.clear()
            self._maybe_embed(force_embed)
            self._refresh_status(quiet=True)

    def _qmd_update(self, attempts: int) -> None:
        attempt, repaired = 0, False
        while True:
            try:
                self.runner.run(
                    ["update"], timeout=self.config.timeouts.update, discard_stdout=True
                )
                return
            except QmdIndexCorrupt:
                if repaired:
                    raise
                repaired = True
                log.warning("qmd index has duplicate documents; re-adding the collections")
                self._repair_collections()
            except (QmdBusy, QmdTimeout) as exc:
                attempt += 1
                if attempt >= attempts or self._stop.wait(0.5 * 2 ** (attempt - 1)):
                    raise
                log.info("qmd update failed (%s); retrying", exc)

    @property
    def vectors_wanted(self) -> bool:
        """Vectors are used by the ``vsearch`` and ``query`` modes."""
        return self.config.search_mode != "search"

    def _missing_models(self, command: str) -> dict[str, str]:
        return missing_models(
            command, self.models, self.state.models_dir, self.config.allow_model_downloads
        )

    def _maybe_embed(self, force: bool) -> None:
        if not self.vectors_wanted:
            return
        problems = self._missing_models("embed")
        if problems:
            log.info("qmd embed skipped: %s", "; ".join(problems.values()))
            return
        interval = self.config.embed_interval_minutes * 60
        due = self._last_embed_mono is None or time.monotonic() - self._last_embed_mono >= interval
        if not force and (not due or self._embed_backoff.active()):
            return
        try:
            out = self.runner.run(
                ["embed"], timeout=self.config.timeouts.embed, discard_stdout=True
            )
        except QmdError as exc:
            self._embed_backoff.fail(str(exc))
            self.last_sync_error = f"embed: {exc}"
            log.warning("qmd embed failed (retrying after backoff): %s", exc)
            return
        if _EMBED_SKIPPED in out.stdout + out.stderr:
            log.info("qmd embed skipped: another embed process is running")
            return
        self._last_embed_mono = time.monotonic()
        self._last_embed_at = time.time()
        self._embed_backoff.reset()

    def _refresh_status(self, *, quiet: bool = False) -> QmdStatusInfo:
        try:
            out = self.runner.run(["status"], timeout=self.config.timeouts.collection)
        except QmdError as exc:
            if not quiet or self._status_info is None:
                raise
            log.debug("qmd status failed: %s", exc)
            return self._status_info
        self._status_info = parse_status(out.stdout)
        return self._status_info

    # -- search -----------------------------------------------------------------------------

    def _wanted_mode(self) -> tuple[SearchModeName, str | None]:
        mode = self.config.search_mode
        if mode == "search":
            return mode, None
        problems = self._missing_models(mode)
        if problems:
            return "search", f"{mode} unavailable: " + "; ".join(problems.values())
        if self._mode_backoff.active():
            return "search", f"{mode} failed recently: {self._mode_backoff.last_error}"
        return mode, None

    def _run_search(
        self,
        mode: str,
        query: str,
        limit: int,
        min_score: float,
        names: Sequence[str],
        extra: Sequence[str] = (),
    ) -> list[QmdHit]:
        args = [mode, "--json", "-n", str(limit), "--min-score", f"{min_score:g}", *extra]
        for name in names:
            args += ["-c", name]
        args += ["--", query]
        out = self.runner.run(args, timeout=self.config.timeouts.search)
        return parse_search_output(out.stdout, out.stderr)

    def _keyword_rescue(
        self, query: str, limit: int, min_score: float, names: Sequence[str]
    ) -> list[QmdHit] | None:
        """BM25 ``search`` needs every term; when that finds nothing, search each keyword.

        One structured ``query`` of ``lex:`` lines without rerank needs no model and fuses
        the per-keyword BM25 lists. Returns ``None`` when that would repeat the search.
        """
        words = rescue_keywords(query)
        if not words or [query.strip().lower()] == words:
            return None  # the same single-term search again
        document = "\n".join(f"lex: {word}" for word in words)
        return self._run_search("query", document, limit, min_score, names, ["--no-rerank"])

    def _search_hits(
        self, query: str, limit: int, min_score: float, names: Sequence[str]
    ) -> list[QmdHit]:
        """Run the search in the effective mode with the per-mode fallbacks of spec 6.5.

        A strict BM25 search without hits is retried per keyword (:meth:`_keyword_rescue`).
        A missing collection is re-created and the search retried once; a rejected flag
        retries as ``query``; a model-backed mode that fails for want of a model, times out
        or is gated retries as BM25 ``search`` and is avoided for a backoff period.
        """
        mode, reason = self._wanted_mode()
        tried: set[str] = set()
        repaired = False
        while True:
            tried.add(mode)
            try:
                hits = self._run_search(mode, query, limit, min_score, names)
            except QmdCollectionMissing:
                if repaired:
                    raise
                repaired = True
                self._reconcile()
                names = [name for name in names if name in self._present]
                continue
            except QmdUnsupportedFlag as exc:
                if "query" in tried:
                    raise
                mode, reason = "query", f"unsupported-search-flags: {exc}"
                continue
            except (QmdModelUnavailable, QmdTimeout, QmdConfigError) as exc:
                if "search" in tried:
                    raise
                self._mode_backoff.fail(str(exc))
                log.warning("qmd %s failed (%s); using BM25 search", mode, exc)
                mode, reason = "search", f"{mode} failed: {exc}"
                continue
            if mode == self.config.search_mode:
                self._mode_backoff.reset()
            if mode == "search" and not hits:
                rescued = self._keyword_rescue(query, limit, min_score, names)
                if rescued is not None:
                    hits, reason = rescued, reason or "keyword-rescue"
            self._effective_mode, self._mode_fallback = mode, reason
            return hits

    def _lookup_docid(self, docid: str) -> list[tuple[str, str]]:
        """``(collection, path)`` rows for a docid, read-only from qmd's SQLite index."""
        if docid in self._docids:
            return self._docids[docid]
        db = self.state.db_path
        if not db.is_file():
            return []
        try:
            conn = sqlite3.connect(f"{db.as_uri()}?mode=ro", uri=True, timeout=1.0)
            try:
                conn.execute("PRAGMA busy_timeout = 1000")
                rows = conn.execute(
                    "SELECT collection, path FROM documents WHERE hash LIKE ? AND active = 1",
                    (docid + "%",),
                ).fetchall()
            finally:
                conn.close()
        except sqlite3.OperationalError as exc:
            if "locked" in str(exc) or "busy" in str(exc):
                raise QmdBusy(f"qmd index busy while reading results: {exc}") from exc
            log.debug("qmd docid lookup failed: %s", exc)
            return []
        found = [(str(c), str(p)) for c, p in rows]
        self._docids[docid] = found
        return found

    def _join(self, spec: CollectionSpec, rel: str) -> Path | None:
        root = os.path.normpath(spec.root)
        candidates = [rel] if "%" not in rel else [rel, unquote(rel)]
        inside = [
            os.path.normpath(os.path.join(root, c))
            for c in candidates
            if _within(os.path.normpath(os.path.join(root, c)), root)
        ]
        if not inside:
            return None
        return Path(next((p for p in inside if os.path.exists(p)), inside[0]))

    def _display_path(self, spec: CollectionSpec, abs_path: Path) -> str:
        """Workspace-relative if the real file is in the workspace, else ``qmd/<col>/<rel>``."""
        real, real_ws = os.path.realpath(abs_path), os.path.realpath(self.workspace)
        if _within(real, real_ws) and real != real_ws:
            rel = Path(os.path.relpath(real, real_ws)).as_posix()
            if not rel.startswith("qmd/"):
                return rel
        return f"qmd/{spec.name}/{Path(os.path.relpath(abs_path, spec.root)).as_posix()}"

    def _locate(self, hit: QmdHit) -> str | None:
        candidates: list[tuple[str, str]] = []
        if hit.collection is not None and hit.rel_path is not None:
            candidates.append((hit.collection, hit.rel_path))
        if hit.docid is not None and (hit.collection not in self._by_name or hit.rel_path is None):
            rows = self._lookup_docid(hit.docid)
            candidates += sorted(rows, key=lambda r: (r[0] != hit.collection, r[1] != hit.rel_path))
        for collection, rel in candidates:
            spec = self._by_name.get(collection)
            if spec is None:
                continue
            path = self._join(spec, rel)
            if path is not None:
                return self._display_path(spec, path)
        return None

    def _candidates(self, hits: Sequence[QmdHit], min_score: float) -> list[Candidate]:
        """The hits mapped to managed files, best per line range, ranked, and cut to the
        snippet budget ``max_injected_chars``."""
        best: dict[tuple[str, int, int], tuple[float, QmdHit]] = {}
        for hit in hits:
            score = min(1.0, max(0.0, hit.score))
            if score < min_score:
                continue
            path = self._locate(hit)
            if path is None:
                log.debug("qmd hit not mappable to a managed file: %s", hit)
                continue
            key = (path, hit.start_line, hit.end_line)
            if key not in best or score > best[key][0]:
                best[key] = (score, hit)
        ranked = sorted(best.items(), key=lambda item: (-item[1][0], item[0][0], item[0][1]))
        budget = self.config.max_injected_chars
        found: list[Candidate] = []
        for (path, start, end), (score, hit) in ranked:
            if budget <= 0:
                break
            snippet = truncate_snippet(hit.snippet, min(self.snippet_chars, budget))
            budget -= len(snippet)
            found.append(
                Candidate(
                    id=f"{path}:{start}:{end}",
                    path=path,
                    start_line=start,
                    end_line=end,
                    text=snippet,
                    source=SOURCE,
                    score=score,
                )
            )
        return found

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
            return ReadFileResult(path=f"qmd/{spec.name}/{found.path}", text=found.text)
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
