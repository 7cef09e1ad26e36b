"""The runnable examples in examples/ run offline and print what their docstrings promise."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def run_example(name: str, tmp_path: Path, *args: str) -> list[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMWELL_")}
    env.update(MEMWELL_LOAD_PLUGINS="builtin", XDG_CONFIG_HOME=str(tmp_path / "xdg"))
    done = subprocess.run(
        [sys.executable, str(EXAMPLES / name), *args],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.splitlines()


def test_openai_tools(tmp_path: Path) -> None:
    out = run_example("openai_tools.py", tmp_path)
    assert out[0] == "user: Which port does the staging database listen on?"
    assert out[1].startswith('tool memory_search {"query": "Which port does the staging')
    assert out[1].endswith("-> 1 result(s), top MEMORY.md#L1")
    assert out[2].startswith('tool memory_get {"path": "MEMORY.md", "from_line": 1')
    assert (
        out[3] == "assistant: The staging database is PostgreSQL 16 on port 5433. (from MEMORY.md)"
    )


def test_openai_tools_on_a_given_workspace(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    (workspace / "memory").mkdir(parents=True)
    (workspace / "memory" / "infra.md").write_text(
        "# Infra\n\nThe staging database listens on port 6543 since May.\n", encoding="utf-8"
    )
    out = run_example("openai_tools.py", tmp_path, str(workspace))
    assert "top memory/infra.md#L1" in out[1]
    assert out[-1] == (
        "assistant: The staging database listens on port 6543 since May. (from memory/infra.md)"
    )


def test_agent_loop(tmp_path: Path) -> None:
    out = run_example("agent_loop.py", tmp_path)
    text = "\n".join(out)
    first, second, third = text.split("user: ")[1:]
    assert "recalled: (nothing)" in first
    assert "captured into memory/inbox.md: I take my coffee black, without sugar." in first
    assert "capture skipped: looks like prompt injection" in second
    assert "recalled: (nothing)" in second
    assert "<relevant-memories>" in third and "</relevant-memories>" in third
    assert "1. - I take my coffee black, without sugar." in third
    assert third.rstrip().endswith(
        "assistant: From memory: - I take my coffee black, without sugar."
    )


@pytest.mark.parametrize("name", ["openai_tools.py", "agent_loop.py"])
def test_examples_write_nothing_to_the_working_directory(tmp_path: Path, name: str) -> None:
    run_example(name, tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) in ([], ["xdg"])
