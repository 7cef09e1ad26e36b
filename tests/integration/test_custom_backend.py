"""The example third-party backend (examples/custom_backend) against memwell's public contract."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from importlib import metadata
from pathlib import Path
from typing import Any

import memwell_jsonfile.plugin as jsonfile_plugin
import memwell_sqlite.plugin as builtin_plugin
import pytest
from memwell.contract.errors import ConfigError
from memwell.contract.manager import MemorySearchManager
from memwell.registry.plugins import PluginRegistry
from memwell.runtime.factory import close_all, open_memory
from memwell.runtime.fallback import FallbackMemoryManager
from memwell.testing import backend_factory, isolated_registry
from memwell.testing.conformance import BackendConformance, write_workspace
from memwell.testing.write_conformance import WriterConformance
from memwell_jsonfile.manager import JsonFileManager

MEMWELL = Path(sys.executable).with_name("memwell")


def _registry() -> PluginRegistry:
    return isolated_registry({"builtin": builtin_plugin, "jsonfile": jsonfile_plugin})


def _factory(tmp_path: Path, **overrides: Any) -> Callable[[Path], MemorySearchManager]:
    return backend_factory({"jsonfile": jsonfile_plugin}, "jsonfile", home=tmp_path, **overrides)


class TestJsonFileKeywordOnly(BackendConformance):
    backend_name = "jsonfile"

    @pytest.fixture
    def memory_factory(self, tmp_path: Path) -> Callable[[Path], MemorySearchManager]:
        return _factory(tmp_path, provider="none")


class TestJsonFileHybrid(BackendConformance):
    backend_name = "jsonfile"

    @pytest.fixture
    def memory_factory(self, tmp_path: Path) -> Callable[[Path], MemorySearchManager]:
        return _factory(tmp_path, provider="hash")

    def test_vectors_are_stored_and_used(self, memory: MemorySearchManager) -> None:
        status = memory.status()
        assert status.search_mode == "hybrid"
        assert status.provider == "hash"
        assert status.vectors == status.chunks > 0
        top = memory.search("staging database port", min_score=0.0)[0]
        assert top.path == "MEMORY.md"


# -- selection through memwell.toml + open_memory ------------------------------------------------


@pytest.fixture
def isolated(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[None]:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    for name in list(os.environ):
        if name.startswith("MEMWELL_"):
            monkeypatch.delenv(name)
    yield
    close_all()


def _toml_workspace(tmp_path: Path, toml: str) -> Path:
    workspace = write_workspace(tmp_path / "ws")
    (workspace / "memwell.toml").write_text(toml, encoding="utf-8")
    return workspace


@pytest.mark.usefixtures("isolated")
def test_selected_by_memwell_toml(tmp_path: Path) -> None:
    workspace = _toml_workspace(
        tmp_path,
        'backend = "jsonfile"\nprovider = "none"\n\n[backends.jsonfile]\nindent = 2\n',
    )
    memory = open_memory(workspace, registry=_registry())
    assert isinstance(memory.inner, FallbackMemoryManager)
    memory.sync(reason="test")
    results = memory.search("Zanzibar codename", min_score=0.0)
    assert results and results[0].path == "memory/2026-01-02.md"
    status = memory.status()
    assert status.backend == "jsonfile"
    assert status.fallback is None and not memory.primary_failed
    index = workspace / ".memwell" / "jsonfile-index.json"
    assert status.db_path == str(index)
    assert index.read_text(encoding="utf-8").startswith("{\n  ")  # indent = 2 was applied
    assert "Zanzibar" in json.dumps(json.loads(index.read_text(encoding="utf-8")))


@pytest.mark.usefixtures("isolated")
def test_plugin_section_is_validated(tmp_path: Path) -> None:
    workspace = _toml_workspace(tmp_path, 'backend = "jsonfile"\n\n[backends.jsonfile]\nzip = 1\n')
    with pytest.raises(ConfigError, match=r"backends\.jsonfile\.zip"):
        open_memory(workspace, registry=_registry())


@pytest.mark.usefixtures("isolated")
def test_custom_index_path(tmp_path: Path) -> None:
    workspace = _toml_workspace(
        tmp_path,
        'backend = "jsonfile"\nprovider = "none"\n[backends.jsonfile]\npath = "idx.json"\n',
    )
    memory = open_memory(workspace, registry=_registry())
    memory.sync()
    assert (workspace / "idx.json").is_file()


def test_unchanged_files_are_not_reread(tmp_path: Path) -> None:
    workspace = write_workspace(tmp_path / "ws")
    memory = _factory(tmp_path, provider="hash")(workspace)
    assert isinstance(memory, JsonFileManager)
    memory.sync()
    provider = memory.runtime.provider
    assert provider is not None
    embedded = provider.embedded  # type: ignore[attr-defined]
    before = memory.index_path.stat().st_mtime_ns
    memory.sync()
    assert memory.index_path.stat().st_mtime_ns == before
    (workspace / "memory" / "extra.md").write_text("Herons fish at dawn.\n", encoding="utf-8")
    memory.sync()
    assert provider.embedded == embedded + 1  # type: ignore[attr-defined]
    reopened = _factory(tmp_path, provider="hash")(workspace)
    assert any(r.path == "memory/extra.md" for r in reopened.search("herons", min_score=0.0))


def test_entry_point_is_installed(monkeypatch: pytest.MonkeyPatch) -> None:
    points = {ep.name: ep.value for ep in metadata.entry_points(group="memwell")}
    assert points.get("jsonfile") == "memwell_jsonfile.plugin"
    monkeypatch.setenv("MEMWELL_LOAD_PLUGINS", "builtin,jsonfile")
    registry = PluginRegistry()
    assert registry.infos["jsonfile"].distribution == "memwell-jsonfile"
    assert "jsonfile" in registry.backends


def test_cli_serves_jsonfile(tmp_path: Path) -> None:
    workspace = _toml_workspace(tmp_path, 'backend = "jsonfile"\nprovider = "none"\n')
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("MEMWELL_")},
        "MEMWELL_LOAD_PLUGINS": "builtin,jsonfile",
        "XDG_CONFIG_HOME": str(tmp_path / "xdg"),
    }
    run = subprocess.run(
        [str(MEMWELL), "-w", str(workspace), "search", "--json", "tomatoes watering"],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        check=True,
    )
    results = json.loads(run.stdout)["results"]
    assert results[0]["path"] == "memory/projects.md"
    assert (workspace / ".memwell" / "jsonfile-index.json").is_file()


class TestJsonFileWrites(WriterConformance):
    @pytest.fixture
    def memory_factory(self, tmp_path: Path) -> Callable[[Path], MemorySearchManager]:
        return _factory(tmp_path, provider="hash")
