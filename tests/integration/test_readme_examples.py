"""The README's examples work as printed (issue 16 item 7)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def readme_python_snippet() -> str:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    section = readme[readme.index("From Python") :]
    found = re.search(r"```python\n(.*?)```", section, re.DOTALL)
    assert found is not None
    return found.group(1)


@pytest.mark.slow
def test_python_snippet_finds_the_release_decision_on_the_demo(tmp_path: Path) -> None:
    shutil.copytree(REPO / "examples" / "demo", tmp_path / "examples" / "demo")
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMWELL_")}
    env.update(XDG_CONFIG_HOME=str(tmp_path / "xdg"), HF_HUB_OFFLINE="1")
    done = subprocess.run(
        [sys.executable, "-c", readme_python_snippet()],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    hits = [line for line in done.stdout.splitlines() if re.match(r"memory/\S+:\d+-\d+  ", line)]
    assert hits, f"the snippet printed no hit:\n{done.stdout}"
    text = (tmp_path / "examples" / "demo" / hits[0].split(":")[0]).read_text()
    assert "ship version 2.3" in text, "the top hit is the release decision"
    projects = (tmp_path / "examples" / "demo" / "memory" / "projects.md").read_text()
    assert "\n".join(projects.split("\n")[:5]) in done.stdout


def _documented_config_keys(readme: str) -> set[str]:
    """Dotted keys the README's Configuration section documents: its TOML block (commented
    keys and inline tables included) and its table of sections."""
    section = readme[
        readme.index("## Configuration") : readme.index(
            "\n## ", readme.index("## Configuration") + 1
        )
    ]
    found = re.search(r"```toml\n(.*?)```", section, re.DOTALL)
    assert found is not None
    keys: set[str] = set()
    prefix = ""
    for raw in found.group(1).splitlines():
        line = raw.strip()
        header = re.match(r"^\[([\w.\-]+)\]", line)
        if header:
            prefix = header.group(1) + "."
            continue
        entry = re.match(r"^#?\s*(\w+)\s*=\s*(.*)", line)
        if not entry:
            continue
        name, value = entry.groups()
        if value.startswith("{") and "=" in value:
            keys.update(f"{prefix}{name}.{inner}" for inner in re.findall(r"(\w+)\s*=", value))
        else:
            keys.add(prefix + name)
    for row in re.findall(r"^\| `\[([\w.]+)\]` \| (.*) \|$", section, re.MULTILINE):
        table, cell = row
        keys.update(f"{table}.{name}" for name in re.findall(r"`(\w+)`", cell))
    return keys


def _setting_keys(values: dict[str, object], prefix: str = "") -> set[str]:
    keys: set[str] = set()
    for name, value in values.items():
        if not prefix and name in ("backends", "providers"):
            continue  # plugin sections, documented by each plugin
        if isinstance(value, dict) and value:
            keys |= _setting_keys(value, f"{prefix}{name.rstrip('_')}.")
        else:
            keys.add(prefix + name.rstrip("_"))  # lambda_ is the TOML key "lambda"
    return keys


def test_configuration_section_documents_every_core_setting() -> None:
    from memwell.config import MemwellSettings

    readme = (REPO / "README.md").read_text(encoding="utf-8")
    undocumented = _setting_keys(MemwellSettings().model_dump()) - _documented_config_keys(readme)
    assert not undocumented, f"settings missing from the README's Configuration: {undocumented}"
