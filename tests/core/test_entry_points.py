"""A real plugin distribution, built and installed in a temporary directory, is discovered
through its ``memwell`` entry point alone; a distribution that fails to import is reported
and skipped."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

TINY_MODULE = '''
"""A third-party memwell plugin that only uses the public API."""
from memwell.contract.descriptors import EmbeddingProviderSpec, SearchBackend
from memwell.contract.hookspecs import hookimpl

HOOK_CALLS = []


def _create(ctx):
    raise RuntimeError("tiny backend is not meant to be built in this test")


@hookimpl
def memwell_search_backends():
    HOOK_CALLS.append("backends")
    yield SearchBackend(name="tiny", create=_create, description="tiny test backend")


@hookimpl
def memwell_embedding_providers():
    HOOK_CALLS.append("providers")
    yield EmbeddingProviderSpec(
        id="tinyemb", create=_create, default_model="tiny-1", transport="local"
    )
'''

BROKEN_MODULE = """
raise ImportError("brokenplug needs a library that is not installed")
"""


def _pyproject(dist: str, module: str, ep_name: str, version: str) -> str:
    return textwrap.dedent(
        f"""
        [build-system]
        requires = ["setuptools>=68"]
        build-backend = "setuptools.build_meta"

        [project]
        name = "{dist}"
        version = "{version}"
        requires-python = ">=3.10"

        [project.entry-points.memwell]
        {ep_name} = "{module}"

        [tool.setuptools]
        py-modules = ["{module}"]
        """
    )


def _make_dist(root: Path, dist: str, module: str, ep_name: str, version: str, code: str) -> Path:
    src = root / dist
    src.mkdir(parents=True)
    (src / "pyproject.toml").write_text(_pyproject(dist, module, ep_name, version))
    (src / f"{module}.py").write_text(code)
    return src


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("plugin-dists")
    tiny = _make_dist(root, "memwell-tinyplug", "tinyplug", "tinyplug", "0.3.1", TINY_MODULE)
    broken = _make_dist(
        root, "memwell-brokenplug", "brokenplug", "brokenplug", "0.0.1", BROKEN_MODULE
    )
    target = root / "site"
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "--no-deps",
            "--no-build-isolation",
            "--no-index",
            "--disable-pip-version-check",
            "--quiet",
            "--target",
            str(target),
            str(tiny),
            str(broken),
        ],
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert any(target.glob("memwell_tinyplug-0.3.1.dist-info"))
    return target


def _env(site: Path, tmp_path: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMWELL_")}
    env["PYTHONPATH"] = str(site)
    env["XDG_CONFIG_HOME"] = str(tmp_path / "xdg")
    return env


def _run(code: str, site: Path, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        env=_env(site, tmp_path),
        cwd=tmp_path,
        timeout=120,
    )


DISCOVER = """
import json, logging, sys
logging.basicConfig()  # the application asks for memwell's log records
import memwell.registry.plugins as plugins
assert "tinyplug" not in sys.modules, "entry points must load lazily"
registry = plugins.get_registry()
assert plugins.get_registry() is registry
_ = registry.backends, registry.providers, registry.backends, registry.providers
import tinyplug
info = registry.infos["tinyplug"]
broken = registry.infos["brokenplug"]
print(json.dumps({
    "backends": sorted(registry.backends),
    "providers": sorted(registry.providers),
    "tiny": {"dist": info.distribution, "version": info.version, "status": info.status,
             "backends": info.backends, "providers": info.providers},
    "broken": {"dist": broken.distribution, "status": broken.status, "error": broken.error},
    "hook_calls": tinyplug.HOOK_CALLS,
    "builtin": registry.infos["builtin"].status,
}))
"""


@pytest.fixture(scope="module")
def discovered(site: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, Any], str]:
    proc = _run(DISCOVER, site, tmp_path_factory.mktemp("discover"))
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout), proc.stderr


def test_discovered_through_entry_point_alone(discovered: tuple[dict[str, Any], str]) -> None:
    data, _ = discovered
    assert "tiny" in data["backends"]
    assert "tinyemb" in data["providers"]
    assert data["tiny"] == {
        "dist": "memwell-tinyplug",
        "version": "0.3.1",
        "status": "loaded",
        "backends": ["tiny"],
        "providers": ["tinyemb"],
    }
    # registries resolved once, however often they are read
    assert sorted(data["hook_calls"]) == ["backends", "providers"]


def test_broken_plugin_reported_and_others_still_load(
    discovered: tuple[dict[str, Any], str],
) -> None:
    data, stderr = discovered
    assert data["broken"]["status"] == "error"
    assert data["broken"]["dist"] == "memwell-brokenplug"
    assert "ImportError" in data["broken"]["error"]
    assert "not installed" in data["broken"]["error"]
    assert data["builtin"] == "loaded"
    assert "builtin" in data["backends"] and "tiny" in data["backends"]
    assert "brokenplug" in stderr  # the failure is logged (to the application's handler)


def test_allow_list_blocks_the_tiny_plugin(site: Path, tmp_path: Path) -> None:
    env = _env(site, tmp_path)
    env["MEMWELL_LOAD_PLUGINS"] = "builtin"
    code = """
    import json, sys
    from memwell.registry.plugins import get_registry
    reg = get_registry()
    print(json.dumps({"tiny": reg.infos["tinyplug"].status,
                      "broken": reg.infos["brokenplug"].status,
                      "imported": "tinyplug" in sys.modules,
                      "backends": sorted(reg.backends)}))
    """
    proc = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert data["tiny"] == "blocked" and data["broken"] == "blocked"
    assert data["imported"] is False  # a blocked plugin is never imported
    assert "tiny" not in data["backends"] and "builtin" in data["backends"]


def test_cli_plugins_lists_the_tiny_plugin(site: Path, tmp_path: Path) -> None:
    script = Path(sys.executable).with_name("memwell")
    proc = subprocess.run(
        [str(script), "plugins", "--json"],
        capture_output=True,
        text=True,
        env=_env(site, tmp_path),
        cwd=tmp_path,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    rows = {row["name"]: row for row in json.loads(proc.stdout)}
    tiny = rows["tinyplug"]
    assert tiny["distribution"] == "memwell-tinyplug" and tiny["version"] == "0.3.1"
    assert tiny["status"] == "loaded"
    assert sorted(tiny["kinds"]) == ["backend", "provider"]
    assert ["backend", "tiny"] in tiny["provides"] and ["provider", "tinyemb"] in tiny["provides"]
    assert rows["brokenplug"]["status"] == "error"
    assert "Traceback" not in proc.stderr
