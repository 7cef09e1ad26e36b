"""Integration with the real qmd 2.8.3 (skipped only when MEMWELL_QMD_COMMAND is unset).

BM25 tests need no model. The vector tests use the tiny random GGUF models from
``plugins/qmd_bridge/scripts/make_tiny_models.py``: they check plumbing (commands run, JSON
parses, paths and lines map), never relevance.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

import pytest
from memwell.registry.plugins import PluginRegistry
from memwell.runtime.factory import open_memory
from memwell_qmd.manager import QmdMemoryManager
from qmd_helpers import QUIET, qmd_processes, qmd_settings

Make = Callable[..., QmdMemoryManager]
SLOW = {"search": 90.0, "embed": 120.0}


def _lines(path: Path, start: int, end: int) -> str:
    return "\n".join(path.read_text().split("\n")[start - 1 : end])


def test_collections_and_bm25_search(make_manager: Make, workspace: Path, real_qmd: str) -> None:
    manager = make_manager(workspace, real_qmd, **QUIET)
    found = manager.state.read_collections()
    assert {name: (e.path, e.pattern) for name, e in found.items()} == {
        "memory-root": (str(workspace), "{MEMORY.md,memory.md}"),
        "memory-dir": (str(workspace / "memory"), "**/*.md"),
    }
    [hit] = manager.search("Zanzibar")
    assert hit.path == "memory/2026-01-02.md"
    assert "Zanzibar" in _lines(workspace / hit.path, hit.start_line, hit.end_line)
    assert "Zanzibar" in hit.snippet and 0 < hit.score <= 1
    [root] = manager.search("staging port 5433")
    assert root.path == "MEMORY.md"
    assert "5433" in _lines(workspace / "MEMORY.md", root.start_line, root.end_line)
    assert manager.search("autoscaler", max_results=1)[0].path == "memory/projects.md"
    status = manager.status()
    assert status.backend == "qmd" and status.files == 8 and status.search_mode == "fts-only"
    assert status.custom["qmd"]["version"] == "2.8.3"
    assert manager.probe_vector().ok is False


def test_update_picks_up_edits_new_and_deleted_files(
    make_manager: Make, workspace: Path, real_qmd: str
) -> None:
    manager = make_manager(workspace, real_qmd, **QUIET)
    (workspace / "memory" / "2026-01-02.md").write_text("# Day\n\nThe codename is now Quokka.\n")
    (workspace / "memory" / "new.md").write_text("# New\n\nPelicans nest by the lake.\n")
    assert manager.search("Quokka") == []  # qmd's index is a snapshot until `qmd update`
    manager.sync()
    [hit] = manager.search("Quokka")
    assert (hit.path, hit.start_line, hit.end_line) == ("memory/2026-01-02.md", 3, 3)
    assert manager.search("Zanzibar") == []
    assert manager.search("pelicans lake")[0].path == "memory/new.md"
    (workspace / "memory" / "new.md").unlink()
    manager.sync()
    assert manager.search("pelicans") == []
    assert manager.status().files == 8


def test_extra_collection_outside_workspace(
    make_manager: Make, workspace: Path, real_qmd: str, tmp_path: Path
) -> None:
    team = tmp_path / "team notes"
    (team / "sub").mkdir(parents=True)
    (team / "sub" / "Plan B.md").write_text("# Plan\n\nline two\nShip the wombat release.\n")
    manager = make_manager(
        workspace, real_qmd, **QUIET, collections=[{"path": str(team), "name": "Team"}]
    )
    [hit] = manager.search("wombat")
    assert hit.path == "qmd/team/sub/Plan B.md"
    assert (
        manager.read_file(hit.path, from_line=hit.start_line, lines=1).text.startswith(
            "Ship the wombat"
        )
        or "wombat" in manager.read_file(hit.path).text
    )
    assert hit.start_line <= 4 <= hit.end_line


def test_keyword_rescue_with_real_qmd(make_manager: Make, workspace: Path, real_qmd: str) -> None:
    manager = make_manager(workspace, real_qmd, **QUIET)
    results = manager.search("port database editor tomatoes", min_score=0.0)
    assert {r.path for r in results} >= {"MEMORY.md", "memory/projects.md"}
    scores = [r.score for r in results]
    assert scores == sorted(scores, reverse=True)


def test_real_timeout_falls_back_to_builtin_and_kills_qmd(
    workspace: Path, registry: PluginRegistry, real_qmd: str, tmp_path: Path
) -> None:
    settings = qmd_settings(real_qmd, **QUIET, timeouts={"search": 0.05})
    memory = open_memory(workspace, settings=settings, registry=registry)
    assert memory.search("Zanzibar")[0].path == "memory/2026-01-02.md"
    status = memory.status()
    assert status.backend == "builtin" and status.fallback is not None
    assert "QmdTimeout" in status.fallback.reason
    assert qmd_processes(tmp_path) == []


def test_offline_model_download_hang_is_contained(
    make_manager: Make, workspace: Path, real_qmd: str, tmp_path: Path
) -> None:
    """Default hf: models with downloads allowed hang offline; the query mode times out,
    its process group is killed, and BM25 answers."""
    manager = make_manager(
        workspace,
        real_qmd,
        **QUIET,
        search_mode="query",
        allow_model_downloads=True,
        force_cpu=True,
        timeouts={"search": 3.0},
    )
    started = time.monotonic()
    [hit] = manager.search("Zanzibar")
    assert hit.path == "memory/2026-01-02.md"
    assert time.monotonic() - started < 20
    status = manager.status()
    assert status.custom["qmd"]["last_search_mode"] == "search"
    assert "query failed: " in status.custom["qmd"]["last_search_fallback"]
    assert qmd_processes(tmp_path) == []


def test_embed_vsearch_and_query_with_tiny_models(
    make_manager: Make,
    workspace: Path,
    real_qmd: str,
    tiny_models: dict[str, str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("CI", "true")  # qmd refuses LLM calls under CI; the bridge drops it
    manager = make_manager(
        workspace,
        real_qmd,
        **QUIET,
        search_mode="vsearch",
        models=tiny_models,
        force_cpu=True,
        timeouts=SLOW,
    )
    assert manager.probe_vector().ok is False
    manager.sync(force=True)
    status = manager.status()
    assert manager.probe_vector().ok and manager.probe_embedding().ok
    assert status.vectors == status.files == 8 and status.integrity_ok
    assert status.search_mode == "vector-only" and status.model == tiny_models["embed"]
    results = manager.search("codename billing rewrite", min_score=0.0)
    assert results and manager.status().custom["qmd"]["last_search_mode"] == "vsearch"
    for r in results:
        assert (workspace / r.path).is_file() and 1 <= r.start_line <= r.end_line
    manager.close()

    manager = make_manager(
        workspace,
        real_qmd,
        **QUIET,
        search_mode="query",
        models=tiny_models,
        force_cpu=True,
        timeouts=SLOW,
    )
    results = manager.search("Zanzibar codename", min_score=0.0)
    assert results and manager.status().custom["qmd"]["last_search_fallback"] is None
    assert manager.status().search_mode == "hybrid"
    assert "memory/2026-01-02.md" in {r.path for r in results}


def test_missing_local_model_degrades_before_spawning(
    make_manager: Make, workspace: Path, real_qmd: str, tiny_models: dict[str, str]
) -> None:
    manager = make_manager(
        workspace,
        real_qmd,
        **QUIET,
        search_mode="query",
        models={**tiny_models, "rerank": "/nonexistent/rerank.gguf"},
    )
    assert manager.search("Zanzibar")[0].path == "memory/2026-01-02.md"
    assert "rerank.gguf does not exist" in (manager.status().provider_unavailable_reason or "")
