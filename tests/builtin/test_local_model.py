"""The main job end to end with the real offline model: semantic recall on the demo workspace."""

from __future__ import annotations

import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import memwell_sqlite.plugin
import pytest
from memwell.contract.manager import MemorySearchManager
from memwell.retrieval.keywords import extract_keywords
from memwell.runtime.factory import close_all
from memwell.testing.factories import synced_copy

pytest.importorskip("memwell_local")
import memwell_local.plugin

pytestmark = pytest.mark.slow
DEMO = Path(__file__).resolve().parents[2] / "examples" / "demo"
QUERY = "when is the next release going live?"


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MemorySearchManager]:
    settings = {"sync": {"watch": False, "on_search": False}}
    plugins = {"builtin": memwell_sqlite.plugin, "local": memwell_local.plugin}
    memory = synced_copy(DEMO, tmp_path_factory.mktemp("demo"), plugins, settings)
    yield memory
    close_all()


def test_auto_selects_the_local_model(demo: MemorySearchManager) -> None:
    status = demo.status()
    assert status.provider == "local" and status.model == "all-MiniLM-L6-v2"
    assert status.search_mode == "hybrid" and status.vectors == status.chunks


def test_semantic_match_without_shared_keywords(demo: MemorySearchManager) -> None:
    answer = (DEMO / "memory" / "2026-11-20.md").read_text(encoding="utf-8")
    shared = set(extract_keywords(QUERY)) & set(extract_keywords(answer))
    assert not shared, f"the query must share no keyword with the answer: {shared}"
    hits = demo.search(QUERY)
    assert hits, "a semantic match is returned even though fusion dilutes its score"
    top = hits[0]
    assert top.path == "memory/2026-11-20.md"
    line = next(n for n, text in enumerate(answer.splitlines(), 1) if "ship" in text)
    assert top.start_line <= line <= top.end_line


def test_cli_keyword_only_mode_on_a_fresh_copy(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    shutil.copytree(DEMO, workspace, ignore=shutil.ignore_patterns(".memwell"))
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "memwell.cli",
            "--provider",
            "none",
            "-w",
            str(workspace),
            "search",
            "backups nightly",
            "--json",
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    assert '"path": "MEMORY.md"' in out.stdout
    status = subprocess.run(
        [sys.executable, "-m", "memwell.cli", "--provider", "none", "-w", str(workspace), "status"],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    assert "fts-only" in status.stdout


def test_readme_example_passes_the_default_floor(demo: MemorySearchManager) -> None:
    # The README's Python example, with the default min_score (calibrated scores).
    hits = demo.search("what did we decide about the release?")
    assert hits and hits[0].path == "memory/2026-11-20.md"
    assert hits[0].score >= 0.35


@pytest.mark.parametrize(
    "query",
    ["how do I bake sourdough bread", "what is the capital of Peru", "best pizza topping"],
)
def test_unrelated_questions_return_nothing_under_the_default_floor(
    demo: MemorySearchManager, query: str
) -> None:
    assert demo.search(query) == []
    assert demo.search(query, min_score=0.0), "there are hits, only below the floor"
