"""Fixtures for the qmd bridge tests: a fake qmd, the real one, tiny GGUF models, and a guard
that fails any test leaving a qmd process behind."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, Literal

import memwell_qmd.plugin
import memwell_sqlite.plugin
import pytest
from memwell.registry.plugins import PluginRegistry
from memwell.runtime.factory import backend_context, close_all
from memwell.testing.conformance import FACTS, write_workspace
from memwell_qmd.config import COMMAND_ENV, QmdConfig
from memwell_qmd.manager import QmdMemoryManager
from qmd_helpers import EXTRA_NOTES, HERE, MODEL_SCRIPT, qmd_settings, wait_no_processes


@pytest.fixture(autouse=True)
def _no_leftover_processes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Every test ends with all managers closed and no process of its own left running."""
    for name in ("FAKE_QMD_FAULT", "FAKE_QMD_FAULT_ON", "FAKE_QMD_FAULT_TIMES"):
        monkeypatch.delenv(name, raising=False)
    yield
    close_all()
    assert wait_no_processes(tmp_path) == [], "a qmd process outlived its test"


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    return write_workspace(tmp_path / "ws", files={**FACTS, **EXTRA_NOTES})


@pytest.fixture
def fake_qmd(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The fake qmd written as an executable into ``tmp_path``; calls logged to a file."""
    exe = tmp_path / "bin" / "qmd"
    exe.parent.mkdir()
    exe.write_text(f"#!{sys.executable}\n" + (HERE / "fake_qmd.py").read_text())
    exe.chmod(0o755)
    monkeypatch.setenv("FAKE_QMD_LOG", str(tmp_path / "fake.log"))
    return exe


@pytest.fixture
def make_manager() -> Iterator[Callable[..., QmdMemoryManager]]:
    """Build :class:`QmdMemoryManager` objects directly; all are closed at teardown."""
    made: list[QmdMemoryManager] = []

    def make(
        workspace: Path,
        command: str | list[str],
        *,
        purpose: Literal["default", "status"] = "default",
        **qmd: Any,
    ) -> QmdMemoryManager:
        settings = qmd_settings(command, **qmd)
        config = QmdConfig.model_validate(settings.backends["qmd"])
        registry = PluginRegistry(load_entry_points=False)
        ctx = backend_context(workspace, settings, registry, config, purpose=purpose)
        manager = QmdMemoryManager(ctx, config)
        made.append(manager)
        return manager

    yield make
    for manager in made:
        manager.close()


@pytest.fixture
def registry() -> PluginRegistry:
    reg = PluginRegistry(load_entry_points=False)
    reg.register(memwell_sqlite.plugin, "builtin")
    reg.register(memwell_qmd.plugin, "qmd")
    return reg


@pytest.fixture(scope="session")
def real_qmd() -> str:
    command = os.environ.get(COMMAND_ENV, "").strip()
    if not command:
        pytest.skip(
            f"{COMMAND_ENV} is unset: install the real qmd with "
            "`bash plugins/qmd_bridge/scripts/install_qmd.sh .cache/qmd` and export "
            f"{COMMAND_ENV}=<the path it prints>"
        )
    return command


@pytest.fixture(scope="session")
def tiny_models(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """The three tiny GGUF models (embed, generate, rerank), written once per session."""
    out = tmp_path_factory.mktemp("models")
    done = subprocess.run(
        [sys.executable, str(MODEL_SCRIPT), str(out)],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    embed, rerank, generate = done.stdout.split()
    return {"embed": embed, "generate": generate, "rerank": rerank}
