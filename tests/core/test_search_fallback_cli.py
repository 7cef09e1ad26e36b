"""``memwell search`` says when its backend fell back, in text and JSON, and ``-v`` shows the
original traceback of the failure."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import memwell_sqlite.plugin
import pytest
from click.testing import CliRunner
from memwell.cli.main import cli, main
from memwell.contract.descriptors import SearchBackend
from memwell.contract.hookspecs import hookimpl
from memwell.contract.manager import ProgressCallback
from memwell.registry import plugins as plugins_mod
from memwell.registry.plugins import PluginRegistry
from memwell.retrieval.candidate import Candidate
from memwell.runtime import factory
from memwell.runtime.backend import MemoryBackend, SearchRequest
from memwell.testing.conformance import write_workspace


class CrashingManager(MemoryBackend):
    """A backend whose search hits a bug deep in its own code."""

    name = "crashing"

    def _sync(self, *, reason: str, force: bool, progress: ProgressCallback | None) -> None:
        return None

    def _search(self, request: SearchRequest) -> list[Candidate]:
        raise KeyError(f"crashing backend lost its posting list for {request.query!r}")

    def _index_status(self) -> dict[str, Any]:
        return {"files": 0, "chunks": 0}


@hookimpl
def memwell_search_backends() -> list[SearchBackend]:
    return [SearchBackend(name="crashing", create=CrashingManager, description="crashes")]


@pytest.fixture(autouse=True)
def registry(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[PluginRegistry]:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    reg = PluginRegistry(load_entry_points=False)
    reg.register(memwell_sqlite.plugin, "builtin")
    reg.register(SimpleNamespace(memwell_search_backends=memwell_search_backends), "crashing")
    monkeypatch.setattr(plugins_mod, "_registry", reg)
    yield reg
    factory.close_all()


def search(ws: Path, *args: str, verbose: bool = False) -> tuple[str, str]:
    argv = ["-w", str(ws), "--backend", "crashing", "--provider", "none"]
    result = CliRunner().invoke(cli, [*(["-v"] if verbose else []), *argv, "search", *args])
    assert result.exit_code == 0, (result.output, result.exception)
    return result.stdout, result.stderr


def test_text_output_says_which_backend_failed_and_which_answered(tmp_path: Path) -> None:
    ws = write_workspace(tmp_path / "ws")
    stdout, stderr = search(ws, "staging database")
    assert "MEMORY.md" in stdout or "memory/" in stdout  # the builtin backend's hits
    assert "backend 'crashing' failed; the 'builtin' backend answered" in stderr
    assert "KeyError" in stderr and "posting list" in stderr  # the reason, in one line
    assert "-v" in stderr and "Traceback" not in stderr


def test_json_output_carries_the_fallback(tmp_path: Path) -> None:
    ws = write_workspace(tmp_path / "ws")
    stdout, stderr = search(ws, "staging database", "--json")
    payload = json.loads(stdout)
    assert payload["degraded"] is True
    assert payload["fallback"]["from"] == "crashing" and payload["fallback"]["to"] == "builtin"
    assert "KeyError" in payload["fallback"]["reason"]
    assert "backend crashing -> builtin" in payload["degraded_reason"]
    assert payload["results"]
    assert "'crashing' failed" in stderr


def test_verbose_shows_the_original_traceback(tmp_path: Path) -> None:
    ws = write_workspace(tmp_path / "ws")
    _, stderr = search(ws, "staging database", "--json", verbose=True)
    assert "Traceback (most recent call last)" in stderr
    assert "in _search" in stderr  # the frame inside the backend, not just the summary
    assert "KeyError" in stderr


def test_stdin_queries_say_so_too(tmp_path: Path) -> None:
    ws = write_workspace(tmp_path / "ws")
    argv = ["-w", str(ws), "--backend", "crashing", "--provider", "none", "search", "--stdin"]
    result = CliRunner().invoke(cli, argv, input="staging database\nZanzibar\n")
    assert result.exit_code == 0, result.output
    assert len(result.stdout.splitlines()) == 2
    assert "backend 'crashing' failed" in result.stderr


def test_a_healthy_backend_prints_no_fallback_note(tmp_path: Path) -> None:
    ws = write_workspace(tmp_path / "ws")
    argv = ["-v", "-w", str(ws), "--provider", "none", "search", "staging database", "--json"]
    result = CliRunner().invoke(cli, argv)
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["fallback"] is None
    assert "failed" not in result.stderr and "Traceback" not in result.stderr


def _unreachable(ctx: Any) -> MemoryBackend:
    raise ConnectionRefusedError("store at 127.0.0.1:9 refused the connection")


@hookimpl(specname="memwell_search_backends")
def unreachable_backends() -> list[SearchBackend]:
    return [SearchBackend(name="unreachable", create=_unreachable, description="down")]


@pytest.mark.parametrize("backend", ["crashing", "unreachable"])
def test_without_a_fallback_backend_search_and_status_say_so(
    tmp_path: Path, registry: PluginRegistry, backend: str, capsys: pytest.CaptureFixture[str]
) -> None:
    registry.unregister("builtin")  # memwell-sqlite is not installed
    registry.register(SimpleNamespace(unreachable_backends=unreachable_backends), "unreachable")
    ws = write_workspace(tmp_path / "ws")
    argv = ["-w", str(ws), "--backend", backend, "--provider", "none"]
    with pytest.raises(SystemExit) as exit_info:
        main([*argv, "search", "staging database"])
    assert exit_info.value.code == 2
    stderr = capsys.readouterr().err
    assert f"error: backend {backend!r} failed (" in stderr
    assert "no fallback" in stderr and "pip install memwell-sqlite" in stderr
    assert "Traceback" not in stderr
    if backend == "unreachable":  # a backend that cannot even open: status says why
        status = CliRunner().invoke(cli, [*argv, "status", "--json"])
        assert status.exit_code == 0, (status.output, status.exception)
        payload = json.loads(status.stdout)
        assert payload["search_mode"] == "disabled" and payload["backend"] == "unreachable"
        assert "ConnectionRefusedError" in payload["fallback"]["reason"]
        assert "no fallback" in payload["fallback"]["reason"]
