"""``memwell plugin new``: the scaffold installs and passes memwell's conformance suites as is."""

from __future__ import annotations

import importlib.util
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from memwell.cli.main import cli, main
from memwell.cli.scaffold import scaffold_plugin
from memwell.contract.errors import ConfigError

REPO = Path(__file__).resolve().parents[2]


def _install(package: Path, site: Path) -> None:
    """Install ``package`` (not editable, no deps) into ``site``, outside the test venv."""
    args = [sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target", str(site)]
    if importlib.util.find_spec("setuptools") is not None:
        args.append("--no-build-isolation")  # build offline with the setuptools at hand
    subprocess.run([*args, str(package)], check=True, capture_output=True, timeout=300)


def _env(site: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMWELL_")}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(site), os.environ.get("PYTHONPATH")]))
    return env


@pytest.mark.parametrize(("kind", "at_least"), [("backend", 50), ("provider", 6)])
def test_scaffold_installs_and_passes_conformance(tmp_path: Path, kind: str, at_least: int) -> None:
    result = CliRunner().invoke(
        cli, ["plugin", "new", "acme", "--kind", kind, "--dir", str(tmp_path)]
    )
    assert result.exit_code == 0, result.output
    package = tmp_path / "memwell-acme"
    assert f"created {package}" in result.output
    site = tmp_path / "site"
    _install(package, site)
    tests = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(package / "tests")],
        cwd=tmp_path,
        env=_env(site),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert tests.returncode == 0, tests.stdout + tests.stderr
    passed = re.search(r"(\d+) passed", tests.stdout)
    assert passed is not None and int(passed.group(1)) >= at_least, tests.stdout
    if kind == "backend":  # the walkthrough prints the count a plugin author will see
        guide = (REPO / "docs" / "writing-a-plugin.md").read_text(encoding="utf-8")
        assert f"\n{passed.group(1)} passed\n" in guide, "docs/writing-a-plugin.md's count"
    assert "failed" not in tests.stdout and "error" not in tests.stdout
    listed = subprocess.run(
        [sys.executable, "-m", "memwell", "plugins", "--json"],
        env=_env(site),
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    row = next(r for r in json.loads(listed.stdout) if r["name"] == "acme")
    assert row["status"] == "loaded" and row["distribution"] == "memwell-acme"
    assert row["api"] == ">=1.0,<2"
    assert row["provides"] == [[kind, "acme"]]


def test_scaffold_refuses_bad_names_and_existing_folders(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for bad in ("Acme", "1acme", "acme-plugin", "", "a" * 60):
        with pytest.raises(ConfigError, match="lowercase identifier"):
            scaffold_plugin(bad, "backend", tmp_path)
    with pytest.raises(ConfigError, match="unknown plugin kind"):
        scaffold_plugin("acme", "widget", tmp_path)
    scaffold_plugin("acme", "provider", tmp_path)
    before = (tmp_path / "memwell-acme" / "README.md").read_text()
    with pytest.raises(SystemExit) as exit_info:
        main(["plugin", "new", "acme", "--kind", "backend", "--dir", str(tmp_path)])
    assert exit_info.value.code == 2
    assert "already exists" in capsys.readouterr().err
    assert (tmp_path / "memwell-acme" / "README.md").read_text() == before  # untouched


def test_provider_walkthrough_quotes_the_generated_package(tmp_path: Path) -> None:
    doc = (Path(__file__).parents[2] / "docs" / "writing-a-provider.md").read_text("utf-8")
    blocks = re.findall(r"```python\n(.*?)```", doc, flags=re.S)
    assert len(blocks) == 3
    package = scaffold_plugin("acme", "provider", tmp_path)
    generated = "".join(p.read_text("utf-8") for p in sorted(package.rglob("*.py")))
    for block in blocks:
        assert block in generated, "docs/writing-a-provider.md is out of date with the scaffold"
