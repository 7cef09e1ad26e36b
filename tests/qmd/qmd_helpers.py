"""Helpers shared by the qmd bridge tests (imported by name: the tests are not a package)."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

from memwell.contract.config import MemwellSettings

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
MODEL_SCRIPT = REPO / "plugins" / "qmd_bridge" / "scripts" / "make_tiny_models.py"

# Extra notes so that BM25 statistics are meaningful (a term in half the docs scores 0).
EXTRA_NOTES = {
    f"memory/notes-{i}.md": f"# Note {i}\n\nRoutine entry number {i} about the garden.\n"
    for i in range(5)
}


def qmd_processes(marker: Path) -> list[int]:
    """Pids of live processes (other than this one) whose environment mentions ``marker``."""
    needle = str(marker).encode()
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            environ = (entry / "environ").read_bytes()
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if needle in environ and state != "Z":
            found.append(int(entry.name))
    return found


def wait_no_processes(marker: Path, seconds: float = 5.0) -> list[int]:
    """Wait up to ``seconds`` for :func:`qmd_processes` to be empty; return what is left."""
    deadline = time.monotonic() + seconds
    while (left := qmd_processes(marker)) and time.monotonic() < deadline:
        time.sleep(0.05)
    return left


def read_log(tmp_path: Path) -> list[dict[str, Any]]:
    """The fake qmd's call log (one dict per call)."""
    path = tmp_path / "fake.log"
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines()]


def commands(tmp_path: Path) -> list[list[str]]:
    """The argv of every fake qmd call so far."""
    return [entry["argv"] for entry in read_log(tmp_path)]


QUIET: dict[str, Any] = {"update_on_boot": False, "update_interval_minutes": 0}
"""Backend settings for tests that drive updates themselves."""


def qmd_settings(command: str | list[str], **qmd: Any) -> MemwellSettings:
    """Settings selecting the qmd backend (keyword-only builtin fallback, no watcher)."""
    return MemwellSettings.model_validate(
        {
            "backend": "qmd",
            "provider": "none",
            "sync": {"watch": False, "on_search": False},
            "backends": {"qmd": {"command": command, **qmd}},
        }
    )
