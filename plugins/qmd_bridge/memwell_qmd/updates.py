"""The upkeep of a workspace's qmd index: collections, ``qmd update`` and ``qmd embed`` (at
boot, on a timer and on sync), and the last ``qmd status``.

:class:`QmdUpdates` is the first layer of :class:`~memwell_qmd.manager.QmdMemoryManager`: it
sets up the isolated qmd state and the command runner; the manager starts it.
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

from memwell.plugin import BackendContext, MemoryBackend

from .backoff import Backoff
from .collections import desired_collections, reconcile
from .command import child_env, resolve_argv, shared_models_dir
from .config import QmdConfig
from .errors import QmdBusy, QmdCollectionMissing, QmdError, QmdIndexCorrupt, QmdTimeout
from .hit_paths import HitLocator
from .modelfiles import DEFAULT_MODELS, ROLES, missing_models, resolve_model
from .parsing import QmdStatusInfo, parse_status
from .process import CommandRunner, QmdRunner
from .state import QmdState

log = logging.getLogger(__name__)

BOOT_ATTEMPTS = 3
_EMBED_SKIPPED = "Another embed process is already running"


class QmdUpdates(MemoryBackend):
    """Keeps qmd's index up to date; ``self._lock`` serialises update, embed and collection
    changes, and ``self._cond`` signals the end of a running update."""

    def __init__(self, ctx: BackendContext, config: QmdConfig) -> None:
        super().__init__(ctx)
        self.workspace = Path(os.path.abspath(ctx.workspace))
        self.config = config
        self.state = QmdState(
            Path(os.path.abspath(self.workspace / self.settings.index_dir)) / "qmd"
        )
        self.collections = desired_collections(
            self.workspace,
            config.collections,
            self.settings.extra_paths,
            include_default_memory=config.include_default_memory,
        )
        self._by_name = {spec.name: spec for spec in self.collections}
        configured = {role: getattr(config.models, role) for role in ROLES}
        self._pinned = {
            role: resolve_model(uri, self.workspace) for role, uri in configured.items() if uri
        }
        self.models = {role: self._pinned.get(role, DEFAULT_MODELS[role]) for role in ROLES}
        self.locator = HitLocator(self.workspace, self._by_name, self.state.db_path)
        self._cond = threading.Condition()
        self._updating = False
        self._update_failed = False
        self._last_update_mono: float | None = None
        self._last_update_at: float | None = None
        self._last_embed_mono: float | None = None
        self._last_embed_at: float | None = None
        self._embed_backoff = Backoff()
        self._present: set[str] = set()
        self._missing: list[str] = []
        self._status_info: QmdStatusInfo | None = None
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []
        self.state.prepare(shared_models_dir())
        self.runner = QmdRunner(
            resolve_argv(config.argv, self.workspace),
            cwd=self.state.working_dir(),
            env=partial(child_env, self.state, self._pinned, config.force_cpu),
            max_output_bytes=config.max_output_bytes,
        )

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
            self.locator.clear()

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
            self.locator.clear()
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
