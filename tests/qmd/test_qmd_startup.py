"""qmd start-up is bounded (``timeouts.startup``) and crashes report their real cause (14.10)."""

from __future__ import annotations

import os
import shlex
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from memwell.registry.plugins import PluginRegistry
from memwell.runtime.factory import open_memory
from memwell_qmd.collections import reconcile
from memwell_qmd.config import QmdTimeouts
from memwell_qmd.errors import (
    QmdCommandError,
    QmdRuntimeBroken,
    QmdTimeout,
    classify_failure,
    node_too_old,
)
from memwell_qmd.process import QmdRunner
from qmd_helpers import QUIET, qmd_processes, qmd_settings

#: The bound under test, and a generous allowance for this shared machine on top of it.
STARTUP_SECONDS = 1.5
SLACK_SECONDS = 15.0


def open_qmd(workspace: Path, registry: PluginRegistry, command: str | list[str]) -> object:
    settings = qmd_settings(command, **QUIET, timeouts={"startup": STARTUP_SECONDS})
    return open_memory(workspace, settings=settings, registry=registry)


@pytest.mark.parametrize("stage", ["version", "collection"])
def test_a_hanging_start_up_is_cut_and_the_fallback_serves(
    workspace: Path,
    registry: PluginRegistry,
    fake_qmd: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    stage: str,
) -> None:
    monkeypatch.setenv("FAKE_QMD_FAULT", "hang")
    monkeypatch.setenv("FAKE_QMD_FAULT_ON", stage)
    started = time.monotonic()
    memory = open_qmd(workspace, registry, str(fake_qmd))
    opened = time.monotonic() - started
    # On main the default 30 s (collection) / 120 s (add) timeouts applied instead.
    assert opened < STARTUP_SECONDS + SLACK_SECONDS
    results = memory.search("Zanzibar codename")  # type: ignore[attr-defined]
    assert results and results[0].path == "memory/2026-01-02.md"
    status = memory.status()  # type: ignore[attr-defined]
    assert status.backend == "builtin" and status.fallback is not None
    assert "timeouts.startup = 1.5s" in status.fallback.reason
    assert qmd_processes(tmp_path) == []


def test_the_default_start_up_bound_is_short() -> None:
    timeouts = QmdTimeouts()
    assert timeouts.startup == 10.0 and timeouts.startup < timeouts.collection


class AddTimesOut:
    """Runs qmd, but every ``collection add`` then times out (``register`` says whether qmd
    got to register the collection first, as the real one does before indexing)."""

    def __init__(self, runner: QmdRunner, *, register: bool) -> None:
        self.runner = runner
        self.register = register

    def run(self, args: Sequence[str], *, timeout: float, discard_stdout: bool = False) -> Any:
        adding = list(args[:2]) == ["collection", "add"]
        if not adding or self.register:
            out = self.runner.run(args, timeout=timeout, discard_stdout=discard_stdout)
        if adding:
            raise QmdTimeout("qmd collection add timed out after 1s", args=args)
        return out


@pytest.mark.parametrize("register", [True, False])
def test_an_add_cut_after_qmd_registered_it_counts(
    workspace: Path, fake_qmd: Path, make_manager: Any, register: bool
) -> None:
    manager = make_manager(workspace, str(fake_qmd), **QUIET)
    present = set(manager._present)
    assert present
    for name in present:
        manager.runner.run(["collection", "remove", name], timeout=10)
    runner = AddTimesOut(manager.runner, register=register)

    def again() -> set[str]:
        found, _ = reconcile(
            runner, manager.state, manager.collections, owned=set(), timeout=10, add_timeout=10
        )
        return found

    if register:
        assert again() == present  # the next update finishes the index
    else:
        with pytest.raises(QmdTimeout):
            again()


# -- crash reports -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("returncode", "stderr", "node", "cls", "says", "never"),
    [
        (-11, "", "v22.23.3", QmdRuntimeBroken, "crashed with SIGSEGV (exit -11)", "Node"),
        (139, "Segmentation fault", None, QmdRuntimeBroken, "SIGSEGV", "Node"),
        (-11, "", "v20.20.2", QmdRuntimeBroken, "Node v20.20.2 is too old", ""),
        (-6, "free(): invalid pointer", "v22.1.0", QmdRuntimeBroken, "SIGABRT", "Node"),
        (1, "Error: boom\nNode.js v22.23.3", None, QmdCommandError, "Error: boom", "mismatch"),
        (
            1,
            "Error: The module 'better_sqlite3.node' was compiled against a different Node.js "
            "version using NODE_MODULE_VERSION 115. This version of Node.js requires "
            "NODE_MODULE_VERSION 127.",
            None,
            QmdRuntimeBroken,
            "Node version mismatch",
            "",
        ),
        (-9, "", None, QmdCommandError, "killed by SIGKILL", "Node"),
    ],
)
def test_crashes_report_their_real_cause(
    returncode: int,
    stderr: str,
    node: str | None,
    cls: type[Exception],
    says: str,
    never: str,
) -> None:
    error = classify_failure(["search", "q"], returncode, "", stderr, node_version=node)
    assert type(error) is cls
    assert says in str(error)
    if never:
        assert never not in str(error).replace("Node.js v22", "")


@pytest.mark.parametrize(("version", "blamed"), [("v18.19.0", True), ("v22.23.3", False)])
def test_a_segfault_blames_node_only_when_qmd_runs_on_an_old_node(
    workspace: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    version: str,
    blamed: bool,
) -> None:
    """A ``node`` that runs the fake qmd (and answers ``--version`` like Node)."""
    node = tmp_path / "node-bin" / "node"
    node.parent.mkdir()
    node.write_text(
        f'#!/bin/sh\nif [ "$1" = "--version" ]; then echo {version}; exit 0; fi\n'
        f'exec "{sys.executable}" "$@"\n'
    )
    node.chmod(0o755)
    monkeypatch.setenv("FAKE_QMD_FAULT", "segv")
    monkeypatch.setenv("FAKE_QMD_FAULT_ON", "search")
    script = Path(__file__).with_name("fake_qmd.py")
    runner = QmdRunner(
        [str(node), str(script)],
        cwd=tmp_path,
        env=lambda _t: dict(os.environ),
        max_output_bytes=4096,
    )
    assert runner.node_binary() == str(node)
    with pytest.raises(QmdRuntimeBroken) as info:
        runner.run(["search", "x", "--json"], timeout=20)
    assert "SIGSEGV" in str(info.value)
    assert (f"Node {version} is too old" in str(info.value)) is blamed
    assert "Node" in str(info.value) if blamed else "Node" not in str(info.value)


def test_a_python_launcher_is_not_taken_for_node(fake_qmd: Path, tmp_path: Path) -> None:
    runner = QmdRunner([str(fake_qmd)], cwd=tmp_path, env=lambda _t: {}, max_output_bytes=4096)
    assert runner.node_binary() is None


def test_the_real_qmd_launcher_names_its_node(real_qmd: str, tmp_path: Path) -> None:
    runner = QmdRunner(
        shlex.split(real_qmd), cwd=tmp_path, env=lambda _t: dict(os.environ), max_output_bytes=4096
    )
    node = runner.node_binary()
    assert node is not None and os.path.basename(node) == "node"
    version = runner.node_version()
    assert version is not None and not node_too_old(version), version


def test_the_real_qmd_starts_inside_the_bound(
    workspace: Path, registry: PluginRegistry, real_qmd: str
) -> None:
    settings = qmd_settings(real_qmd, **QUIET)  # the default timeouts.startup (10 s)
    memory = open_memory(workspace, settings=settings, registry=registry)
    assert memory.status().backend == "qmd"
