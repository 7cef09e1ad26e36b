"""Sync requests made while a sync runs are never lost, and the watcher ignores the index.

A sync asked for during a running sync waits for it and then gets a scan of its own, so an
edit made meanwhile is indexed when the call returns (issue 14 item 1).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from pathlib import Path

import pytest
from memwell.contract.config import MemwellSettings
from memwell.contract.descriptors import BackendContext
from memwell.providers.runtime import EmbeddingRuntime
from memwell.registry.plugins import PluginRegistry
from memwell.testing import HashEmbeddingProvider
from memwell.util.sync_gate import SyncGate
from memwell_sqlite.manager import SqliteMemoryManager
from memwell_sqlite.watcher import MemoryWatcher


def _manager(workspace: Path, registry: PluginRegistry, **extra: object) -> SqliteMemoryManager:
    settings = MemwellSettings.model_validate(
        {"provider": "hash", "sync": {"watch": False, "on_search": False}, **extra}
    )
    runtime = EmbeddingRuntime(settings, registry, workspace)
    ctx = BackendContext(
        workspace=workspace, settings=settings, embeddings=runtime, registry=registry
    )
    manager = registry.backends["builtin"].create(ctx)
    assert isinstance(manager, SqliteMemoryManager)
    return manager


def test_edit_during_a_running_sync_is_indexed_by_the_next_sync_call(
    workspace: Path, registry: PluginRegistry, provider: HashEmbeddingProvider
) -> None:
    """The issue's repro, made deterministic: the forced sync is held inside its first
    embedding call (after it read MEMORY.md) while the edit is made and sync() is called."""
    manager = _manager(workspace, registry)
    manager.sync()
    (workspace / "memory" / "fresh.md").write_text("# Fresh\n\nuncached words to embed\n")
    started, release = threading.Event(), threading.Event()

    def hold(texts: Sequence[str]) -> None:
        if not started.is_set():
            started.set()
            release.wait(30)

    provider.fail = hold
    first = threading.Thread(target=manager.sync, kwargs={"force": True})
    first.start()
    assert started.wait(30), "the forced sync never embedded anything"
    with (workspace / "MEMORY.md").open("a", encoding="utf-8") as fh:
        fh.write("\nThe lost update token is zanzibarquokka.\n")
    second = threading.Thread(target=manager.sync)
    second.start()
    time.sleep(0.3)
    assert second.is_alive(), "sync() returned while another sync was still running"
    release.set()
    first.join(30)
    second.join(30)
    assert not first.is_alive() and not second.is_alive()
    try:
        hits = manager.search("zanzibarquokka", min_score=0.0)
        found = [h.path for h in hits if "zanzibarquokka" in h.snippet]
        assert found == ["MEMORY.md"], "the edit made during a sync was lost"
    finally:
        manager.close()


def test_requests_during_a_scan_share_one_rerun_and_see_its_error() -> None:
    gate = SyncGate()
    scans: list[bool] = []
    inside, release = threading.Event(), threading.Event()

    def scan(force: bool, sources: frozenset[str] | None) -> None:
        scans.append(force)
        if len(scans) == 1:
            inside.set()
            release.wait(10)
        elif len(scans) == 2:
            raise RuntimeError("second scan failed")

    errors: list[BaseException] = []

    def request(force: bool) -> None:
        try:
            gate.run(scan, force=force)
        except RuntimeError as exc:
            errors.append(exc)

    first = threading.Thread(target=request, args=(False,))
    first.start()
    assert inside.wait(10)
    waiters = [threading.Thread(target=request, args=(i == 1,)) for i in range(4)]
    for thread in waiters:
        thread.start()
    time.sleep(0.2)
    release.set()
    for thread in [first, *waiters]:
        thread.join(10)
    # one scan that ran, one rerun for all four requests made during it (forced: one asked)
    assert scans == [False, True]
    assert len(errors) == 4 and all(str(e) == "second scan failed" for e in errors)
    gate.run(scan)
    assert scans == [False, True, False]


def _wait_for(predicate: object, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():  # type: ignore[operator]
            return True
        time.sleep(0.05)
    return False


@pytest.mark.parametrize("index_dir", [".memwell", "idx", "memory/idx"])
def test_watcher_ignores_events_in_its_own_index_directory(workspace: Path, index_dir: str) -> None:
    dirty: list[float] = []
    root = workspace / index_dir
    watcher = MemoryWatcher(
        workspace,
        [workspace, workspace / "memory"],
        on_dirty=lambda: dirty.append(time.monotonic()),
        on_change=lambda: None,
        debounce_s=0.05,
        ignore=[root],
    )
    watcher.start()
    try:
        root.mkdir(parents=True)
        (root / "index-1.sqlite").write_bytes(b"x")
        (root / "notes.md").write_text("# not memory\n")
        (root / "CURRENT").write_text("index-1.sqlite\n")
        (root / "index-1.sqlite").unlink()
        assert not _wait_for(lambda: dirty, 1.0), "the watcher reacted to its index directory"
        (workspace / "MEMORY.md").write_text("# Memory\n\nchanged\n")
        assert _wait_for(lambda: dirty, 5.0), "the watcher missed an edit of MEMORY.md"
    finally:
        watcher.stop()
