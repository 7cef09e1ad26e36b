"""``MEMWELL_TRACE_PLUGINS=1`` prints every plugin hook call to stderr, and nothing without it."""

from __future__ import annotations

import subprocess
import sys
from types import SimpleNamespace

import pytest
from memwell.contract.descriptors import SearchBackend
from memwell.contract.hookspecs import hookimpl
from memwell.registry.plugins import PluginRegistry


def _backends() -> list[SearchBackend]:
    return [SearchBackend(name="traced", create=lambda ctx: None, description="traced")]  # type: ignore[arg-type,return-value]


def _failing_turn(messages: list[object]) -> None:
    raise RuntimeError("capture store offline")


def registry() -> PluginRegistry:
    reg = PluginRegistry(load_entry_points=False)
    reg.register(
        SimpleNamespace(
            memwell_search_backends=hookimpl(specname="memwell_search_backends")(_backends),
            memwell_after_turn=hookimpl(specname="memwell_after_turn")(_failing_turn),
        ),
        "acme",
    )
    return reg


def test_trace_shows_each_hook_call_with_result_and_errors(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("MEMWELL_TRACE_PLUGINS", "1")
    reg = registry()
    assert list(reg.backends) == ["traced"]
    assert reg.call_each("memwell_after_turn", messages=["hi"], session_key=None) == []
    lines = [line for line in capsys.readouterr().err.splitlines() if "memwell trace:" in line]
    assert len(lines) == 2, lines
    assert lines[0].startswith("memwell trace: acme.memwell_search_backends() -> [SearchBackend(")
    assert "name='traced'" in lines[0] and lines[0].endswith(" ms)")
    assert "acme.memwell_after_turn(messages=['hi'])" in lines[1]
    assert "raised RuntimeError: capture store offline" in lines[1]


@pytest.mark.parametrize("value", [None, "0", "false"])
def test_no_trace_unless_asked(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], value: str | None
) -> None:
    if value is None:
        monkeypatch.delenv("MEMWELL_TRACE_PLUGINS", raising=False)
    else:
        monkeypatch.setenv("MEMWELL_TRACE_PLUGINS", value)
    assert list(registry().backends) == ["traced"]
    assert "memwell trace" not in capsys.readouterr().err


def test_trace_from_the_cli() -> None:
    run = subprocess.run(
        [sys.executable, "-m", "memwell", "plugins", "--json"],
        env={"MEMWELL_TRACE_PLUGINS": "1", "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    traced = [line for line in run.stderr.splitlines() if line.startswith("memwell trace: ")]
    assert any(".memwell_search_backends() -> [" in line for line in traced), run.stderr
    assert all(line.endswith(" ms)") for line in traced)
