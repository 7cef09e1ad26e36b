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
