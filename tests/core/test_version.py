"""One version source: ``memwell.__version__`` (the package metadata is built from it), shown
by ``memwell --version`` with the plugin API version; each plugin's version is defined once."""

from __future__ import annotations

import importlib
from importlib.metadata import version
from pathlib import Path

import memwell
import pytest
import tomllib
from click.testing import CliRunner
from memwell.cli.main import cli
from memwell.contract.api_version import PLUGIN_API_VERSION

ROOT = Path(__file__).resolve().parents[2]
PROJECTS = sorted(
    [ROOT / "pyproject.toml", *ROOT.glob("plugins/**/pyproject.toml")],
    key=str,
)


def test_version_option_shows_the_single_source() -> None:
    result = CliRunner().invoke(cli, ["--version"])
    assert result.exit_code == 0
    assert result.output.strip() == (
        f"memwell, version {memwell.__version__} (plugin API {PLUGIN_API_VERSION})"
    )
    assert version("memwell") == memwell.__version__


def _module(pyproject: Path) -> str:
    if pyproject.parent == ROOT:
        return "memwell"
    (init,) = pyproject.parent.glob("memwell_*/__init__.py")
    return init.parent.name


@pytest.mark.parametrize("pyproject", PROJECTS, ids=lambda p: str(p.parent.relative_to(ROOT)))
def test_each_package_defines_its_version_once(pyproject: Path) -> None:
    project = tomllib.loads(pyproject.read_text(encoding="utf-8"))["project"]
    module = importlib.import_module(_module(pyproject))
    if "version" in project:  # a literal version: the module must not repeat it
        assert not hasattr(module, "__version__"), f"{module.__name__} repeats {pyproject}"
    else:
        assert "version" in project.get("dynamic", [])
        assert version(project["name"]) == module.__version__
