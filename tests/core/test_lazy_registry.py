"""The lazy plugin registry (issue 16 item 3): a lookup by name imports only the entry points
that provide it, as the plugin index remembers; conflicts and whole-registry views stay
complete; a one-shot search imports only the plugins it uses."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest
from memwell.registry import plugins as plugins_mod
from memwell.registry.index import PluginIndex
from memwell.registry.plugins import ALLOW_LIST_ENV, PluginRegistry
from memwell.util.entry_points import EntryPointRef

PLUGIN = """
from memwell.contract.descriptors import EmbeddingProviderSpec, SearchBackend
from memwell.contract.hookspecs import hookimpl


def _never(ctx):
    raise AssertionError("not built")


@hookimpl
def memwell_search_backends():
    for name in {backends!r}:
        yield SearchBackend(name=name, create=_never, description=name)


@hookimpl
def memwell_embedding_providers():
    for pid, priority in {providers!r}:
        yield EmbeddingProviderSpec(
            id=pid, create=_never, default_model="m", transport="remote", auto_priority=priority
        )
"""

PACKAGES = {
    "lazyalpha": {"backends": ["alpha"], "providers": [("emb-late", 50)]},
    "lazybeta": {"backends": ["beta", "same"], "providers": []},
    "lazygamma": {"backends": ["same"], "providers": [("emb-early", 5)]},
}


def _write(root: Path, package: str, backends: list[str], providers: list[object]) -> None:
    directory = root / package
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "__init__.py").write_text("")
    code = PLUGIN.format(backends=backends, providers=providers)
    (directory / "plugin.py").write_text(textwrap.dedent(code))


@pytest.fixture
def installed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """Three plugin packages on ``sys.path``, found through fake ``memwell`` entry points."""
    root = tmp_path / "site"
    for package, parts in PACKAGES.items():
        _write(root, package, parts["backends"], parts["providers"])  # type: ignore[arg-type]
    monkeypatch.syspath_prepend(str(root))
    points = [EntryPointRef(p, f"{p}.plugin", "memwell", p, "0.1") for p in PACKAGES]
    monkeypatch.setattr(plugins_mod, "find_entry_points", lambda group: points)
    monkeypatch.delenv(ALLOW_LIST_ENV, raising=False)
    yield root
    _forget_modules()


def _forget_modules() -> None:
    for name in [m for m in sys.modules if m.split(".")[0] in PACKAGES]:
        del sys.modules[name]


def _imported() -> list[str]:
    return sorted(m.split(".")[0] for m in sys.modules if m.endswith(".plugin") and "lazy" in m)


def _registry(tmp_path: Path) -> PluginRegistry:
    _forget_modules()
    return PluginRegistry(index=PluginIndex(tmp_path / "cache" / "plugin-index.json"))


def test_a_warm_index_imports_only_the_plugin_that_provides_the_name(
    installed: Path, tmp_path: Path
) -> None:
    cold = _registry(tmp_path)
    assert _imported() == [], "nothing is imported when the registry is made"
    assert cold.backend("alpha") is not None
    assert _imported() == ["lazyalpha", "lazybeta", "lazygamma"], "an empty index: all load"
    warm = _registry(tmp_path)
    spec = warm.backend("alpha")
    assert spec is not None and spec.name == "alpha"
    assert _imported() == ["lazyalpha"]
    assert warm.backend("missing") is None
    assert _imported() == ["lazyalpha"], "a name no plugin registers imports nothing more"


def test_a_warm_lookup_does_not_rewrite_the_index(installed: Path, tmp_path: Path) -> None:
    """Every one-shot command loads its backend: an unchanged record is not written again
    (the rewrite was a JSON dump and a file replace per command)."""
    _registry(tmp_path).resolve()
    index = tmp_path / "cache" / "plugin-index.json"
    before = os.stat(index)
    assert _registry(tmp_path).backend("alpha") is not None
    assert _imported() == ["lazyalpha"]
    after = os.stat(index)
    assert (after.st_ino, after.st_mtime_ns) == (before.st_ino, before.st_mtime_ns)
    _write(installed, "lazyalpha", ["alpha", "epsilon"], [])
    assert _registry(tmp_path).backend("epsilon") is not None
    assert os.stat(index).st_ino != before.st_ino, "a changed plugin's record is rewritten"


def test_a_conflict_is_found_without_importing_the_bystander(
    installed: Path, tmp_path: Path
) -> None:
    _registry(tmp_path).resolve()  # fills the index
    warm = _registry(tmp_path)
    assert warm.backend("same") is None
    assert _imported() == ["lazybeta", "lazygamma"]
    assert "both are disabled" in warm.conflicts[("backend", "same")]
    hint = warm.unknown_name_hint("backend", "same")
    assert "'lazybeta' and 'lazygamma'" in hint
    statuses = {name: info.status for name, info in warm.infos.items()}
    assert statuses == {"lazyalpha": "loaded", "lazybeta": "conflict", "lazygamma": "conflict"}
    assert sorted(warm.backends) == ["alpha", "beta"], "whole-registry views load everything"


def test_auto_order_comes_from_the_index_and_imports_each_candidate_when_tried(
    installed: Path, tmp_path: Path
) -> None:
    _registry(tmp_path).resolve()
    warm = _registry(tmp_path)
    assert warm.auto_candidates("provider") == ["emb-early", "emb-late"]
    assert _imported() == []
    assert warm.provider("emb-early") is not None
    assert _imported() == ["lazygamma"]


def test_a_changed_plugin_is_imported_again_and_its_new_name_found(
    installed: Path, tmp_path: Path
) -> None:
    _registry(tmp_path).resolve()
    _write(installed, "lazybeta", ["beta", "same", "delta"], [])
    warm = _registry(tmp_path)
    spec = warm.backend("delta")
    assert spec is not None, "the index record of the edited plugin is no longer trusted"
    assert "lazybeta" in _imported() and "lazyalpha" not in _imported()


def test_hooks_run_once_per_plugin_across_lazy_loads(installed: Path, tmp_path: Path) -> None:
    _registry(tmp_path).resolve()
    warm = _registry(tmp_path)
    calls: list[str] = []
    original = warm._yielded

    def counting(kind: str, impl: object) -> object:
        key = (impl.plugin_name, kind)  # type: ignore[attr-defined]
        if key not in warm._yields:
            calls.append(f"{key[0]}:{kind}")
        return original(kind, impl)  # type: ignore[arg-type]

    warm._yielded = counting  # type: ignore[assignment,method-assign]
    warm.backend("alpha")
    warm.backend("beta")  # a second plugin registers: the first one's hooks are not re-run
    warm.resolve()
    assert sorted(calls) == sorted(f"{p}:{k}" for p in PACKAGES for k in ("backend", "provider"))


# -- a one-shot search in a fresh process --------------------------------------------------------

PROBE = """
import json, sys
from memwell.cli.main import main
try:
    main(sys.argv[1:])
except SystemExit:
    pass
plugins = sorted({m.split(".")[0] for m in sys.modules if m.startswith("memwell_")})
print("PROBE", json.dumps({"plugins": plugins, "numpy": "numpy" in sys.modules}))
"""


def _probe(tmp_path: Path, *args: str) -> dict[str, object]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMWELL_")}
    env.update(XDG_CONFIG_HOME=str(tmp_path / "xdg"), XDG_CACHE_HOME=str(tmp_path / "cache"))
    env["HF_HUB_OFFLINE"] = "1"
    proc = subprocess.run(
        [sys.executable, "-c", PROBE, *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=300,
        check=True,
    )
    line = next(line for line in proc.stdout.splitlines() if line.startswith("PROBE "))
    data: dict[str, object] = json.loads(line.removeprefix("PROBE "))
    return data


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    (ws / "memory").mkdir(parents=True)
    (ws / "memory" / "ports.md").write_text("The amber service listens on port 8125.\n")
    return ws


def test_keyword_one_shot_search_imports_only_the_builtin_backend_and_no_numpy(
    tmp_path: Path, workspace: Path
) -> None:
    args = ("--provider", "none", "-w", str(workspace), "search", "amber port")
    _probe(tmp_path, *args)  # the first run fills the plugin index
    assert _probe(tmp_path, *args) == {"plugins": ["memwell_sqlite"], "numpy": False}


def test_hybrid_one_shot_search_imports_only_the_backend_and_the_local_provider(
    tmp_path: Path, workspace: Path
) -> None:
    args = ("--provider", "local", "-w", str(workspace), "search", "amber port")
    _probe(tmp_path, *args)
    found = _probe(tmp_path, *args)
    assert found["plugins"] == ["memwell_local", "memwell_sqlite"]


@pytest.mark.parametrize(
    ("path", "workspace"),
    [
        ("/ws/memory/a.md", "/ws"),
        ("/ws/a.md", "/"),
        ("/wsx/a.md", "/ws"),
        ("/ws/../x.md", "/ws"),
        ("/ws/memory/a.md", "/ws/"),
        ("/other/deep/a.md", "/ws/inner"),
        ("/ws/./memory/a.md", "/ws"),
    ],
)
def test_relative_path_fast_path_agrees_with_relpath(path: str, workspace: str) -> None:
    from pathlib import PurePath

    from memwell.sources.discovery import relative_path

    expected = PurePath(os.path.relpath(path, workspace)).as_posix()
    assert relative_path(Path(path), Path(workspace)) == expected == relative_path(path, workspace)
