"""Core memory files: always in the system prompt, in order, within a character budget.

Issue 20 item 6. Also checks that dated files in ``memory/`` subfolders (``memory/episodes/``)
are indexed and searchable like any other memory file.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from memwell.agent.core_files import TRUNCATED, load_core_memory
from memwell.agent.prompt import core_memory_section
from memwell.contract.config import MemwellSettings
from memwell.runtime.factory import close_all, open_memory


def _write(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text, encoding="utf-8")
    return root


def test_default_is_memory_md(tmp_path: Path) -> None:
    ws = _write(tmp_path, {"MEMORY.md": "# Memory\n\nShip on Fridays.\n", "SOUL.md": "calm"})
    section = core_memory_section(ws)
    assert section.startswith("## Core Memory")
    assert "### MEMORY.md\n# Memory\n\nShip on Fridays." in section
    assert "calm" not in section, "only configured files are loaded"


def test_configured_files_in_order_from_memwell_toml(tmp_path: Path) -> None:
    ws = _write(
        tmp_path,
        {
            "IDENTITY.md": "I am Ada.",
            "SOUL.md": "Be kind.",
            "MEMORY.md": "Facts.",
            "memwell.toml": 'core_files = ["IDENTITY.md", "SOUL.md", "MEMORY.md"]\n',
        },
    )
    section = core_memory_section(ws)
    assert section.index("I am Ada.") < section.index("Be kind.") < section.index("Facts.")


def test_budget_cuts_the_crossing_file_and_omits_the_rest(tmp_path: Path) -> None:
    ws = _write(tmp_path, {"IDENTITY.md": "a" * 300, "SOUL.md": "b" * 900, "MEMORY.md": "c" * 50})
    result = load_core_memory(ws, ["IDENTITY.md", "SOUL.md", "MEMORY.md"], max_chars=800)
    assert len(result.text) <= 800
    assert result.included == ["IDENTITY.md", "SOUL.md"]
    assert result.truncated == ["SOUL.md"] and result.omitted == ["MEMORY.md"]
    assert "a" * 300 in result.text and result.text.endswith(TRUNCATED)


@given(
    budget=st.integers(min_value=200, max_value=3000),
    sizes=st.lists(st.integers(0, 1500), max_size=4),
)
@settings(max_examples=60, deadline=None)
def test_never_over_budget(
    tmp_path_factory: pytest.TempPathFactory, budget: int, sizes: list[int]
) -> None:
    ws = tmp_path_factory.mktemp("ws")
    names = [f"F{i}.md" for i in range(len(sizes))]
    _write(ws, {name: "x" * size for name, size in zip(names, sizes, strict=True)})
    result = load_core_memory(ws, names, max_chars=budget)
    assert len(result.text) <= budget
    assert set(result.included) | set(result.omitted) | set(result.problems) >= {
        n for n, size in zip(names, sizes, strict=True) if size
    }


def test_paths_outside_the_workspace_are_refused(tmp_path: Path) -> None:
    outside = _write(tmp_path / "outside", {"secret.md": "TOP SECRET"})
    ws = _write(tmp_path / "ws", {"MEMORY.md": "ok"})
    os.symlink(outside / "secret.md", ws / "LINK.md")
    os.symlink(outside, ws / "linked")
    names = [
        "../outside/secret.md",
        str(outside / "secret.md"),
        "LINK.md",
        "linked/secret.md",
        "notes.txt",
        "NOPE.md",
        "MEMORY.md",
    ]
    result = load_core_memory(ws, names, max_chars=5000)
    assert "TOP SECRET" not in result.text
    assert result.included == ["MEMORY.md"]
    assert set(result.problems) == set(names) - {"MEMORY.md"}
    assert result.problems["NOPE.md"] == "missing"


def test_empty_when_nothing_to_load(tmp_path: Path) -> None:
    assert core_memory_section(tmp_path, settings=MemwellSettings()) == ""


def test_episode_subfolders_are_indexed(tmp_path: Path) -> None:
    ws = _write(
        tmp_path,
        {
            "MEMORY.md": "# Memory\n",
            "memory/episodes/2026-03-04.md": "# Episode\n\nWe fixed the flux capacitor.\n",
            "memory/episodes/2026/deep/2026-03-05.md": "# Later\n\nThe capacitor held.\n",
        },
    )
    try:
        memory = open_memory(ws, overrides={"provider": "none", "sync": {"watch": False}})
        memory.sync()
        paths = {hit.path for hit in memory.search("capacitor", min_score=0)}
        assert paths == {"memory/episodes/2026-03-04.md", "memory/episodes/2026/deep/2026-03-05.md"}
        assert memory.read_file("memory/episodes/2026-03-04.md").text.startswith("# Episode")
    finally:
        close_all()
