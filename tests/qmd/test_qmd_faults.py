"""qmd faults end with builtin results through open_memory's FallbackMemoryManager.

Each test opens the workspace with ``backend = "qmd"`` (the fake qmd) and the builtin backend
as fallback, breaks qmd in one way, and checks that the search is still answered, by the
builtin backend, and that ``status().fallback`` names qmd and the reason.
"""

from __future__ import annotations

import sqlite3
import time
from pathlib import Path
from typing import Any

import pytest
from memwell.contract.manager import MemorySearchManager
from memwell.registry.plugins import PluginRegistry
from memwell.runtime.factory import open_memory
from memwell.runtime.fallback import FallbackMemoryManager
from qmd_helpers import QUIET, qmd_processes, qmd_settings


def _open(
    workspace: Path, registry: PluginRegistry, command: str, **qmd: Any
) -> MemorySearchManager:
    return open_memory(
        workspace, settings=qmd_settings(command, **{**QUIET, **qmd}), registry=registry
    )


def _assert_builtin_answers(memory: MemorySearchManager, reason: str) -> None:
    results = memory.search("Zanzibar codename")
    assert results and results[0].path == "memory/2026-01-02.md"
    status = memory.status()
    assert status.backend == "builtin"
    assert status.fallback is not None
    assert status.fallback.from_ == "qmd" and status.fallback.to == "builtin"
    assert reason in status.fallback.reason
    assert status.custom["fallback"]["disabled"] is True


def test_healthy_qmd_is_served_first(
    workspace: Path, registry: PluginRegistry, fake_qmd: Path
) -> None:
    memory = _open(workspace, registry, str(fake_qmd))
    assert isinstance(memory.inner, FallbackMemoryManager)
    assert memory.search("Zanzibar")[0].path == "memory/2026-01-02.md"
    status = memory.status()
    assert status.backend == "qmd" and status.fallback is None


@pytest.mark.parametrize(
    ("fault", "reason"),
    [
        ("crash", "QmdCommandError: qmd search --json failed (exit 1): Error: boom"),
        ("exit", "failed (exit 3): something went wrong"),
        ("segv", "QmdRuntimeBroken"),
        ("garbage", "QmdOutputError: qmd output has no JSON array"),
        ("badjson", "QmdOutputError"),
        ("empty", "qmd printed nothing"),
        ("busy", "QmdBusy"),
        ("big", "printed more than"),
    ],
)
def test_search_fault_falls_back_to_builtin(
    workspace: Path,
    registry: PluginRegistry,
    fake_qmd: Path,
    monkeypatch: pytest.MonkeyPatch,
    fault: str,
    reason: str,
) -> None:
    memory = _open(workspace, registry, str(fake_qmd))
    monkeypatch.setenv("FAKE_QMD_FAULT", fault)
    _assert_builtin_answers(memory, reason)


def test_hang_past_timeout_falls_back_and_leaves_no_process(
    workspace: Path,
    registry: PluginRegistry,
    fake_qmd: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    memory = _open(workspace, registry, str(fake_qmd), timeouts={"search": 1})
    pids = tmp_path / "pids"
    monkeypatch.setenv("FAKE_QMD_FAULT", "hang")
    monkeypatch.setenv("FAKE_QMD_PIDS", str(pids))
    started = time.monotonic()
    _assert_builtin_answers(memory, "QmdTimeout: qmd search --json timed out after 1s")
    assert time.monotonic() - started < 30
    assert len(pids.read_text().split()) == 2  # the fake's 'launcher' and its child
    assert qmd_processes(tmp_path) == []


def test_missing_binary_goes_straight_to_builtin(
    workspace: Path, registry: PluginRegistry, tmp_path: Path
) -> None:
    memory = _open(workspace, registry, str(tmp_path / "no" / "qmd"))
    _assert_builtin_answers(memory, "QmdNotInstalled: cannot run qmd command")


def test_startup_failure_goes_straight_to_builtin(
    workspace: Path,
    registry: PluginRegistry,
    fake_qmd: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("FAKE_QMD_FAULT", "crash")
    monkeypatch.setenv("FAKE_QMD_FAULT_ON", "collection")
    memory = _open(workspace, registry, str(fake_qmd))
    _assert_builtin_answers(memory, "qmd collection add failed (exit 1)")


def test_busy_index_while_mapping_results(
    workspace: Path,
    registry: PluginRegistry,
    fake_qmd: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Hits without a file URI are mapped through qmd's SQLite; a locked index fails over."""
    memory = _open(workspace, registry, str(fake_qmd))
    db = workspace / ".memwell" / "qmd" / "cache" / "qmd" / "index.sqlite"
    holder = sqlite3.connect(db, isolation_level=None)
    try:
        holder.execute("CREATE TABLE documents (collection, path, hash, active)")
        holder.execute("BEGIN EXCLUSIVE")
        monkeypatch.setenv("FAKE_QMD_FAULT", "nofile")
        _assert_builtin_answers(memory, "qmd index busy while reading results")
    finally:
        holder.close()


def test_next_open_retries_qmd(
    workspace: Path,
    registry: PluginRegistry,
    fake_qmd: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    memory = _open(workspace, registry, str(fake_qmd))
    monkeypatch.setenv("FAKE_QMD_FAULT", "crash")
    _assert_builtin_answers(memory, "boom")
    monkeypatch.delenv("FAKE_QMD_FAULT")
    again = _open(workspace, registry, str(fake_qmd))
    assert again is not memory
    assert again.search("Zanzibar")[0].path == "memory/2026-01-02.md"
    assert again.status().backend == "qmd"
