"""CONTRIBUTING.md's commands print what it says they print (issue 40 item 14)."""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def test_the_test_count_command_ends_with_the_total() -> None:
    guide = (REPO / "CONTRIBUTING.md").read_text(encoding="utf-8")
    found = re.search(
        r"^\$ \.venv/bin/python (-m pytest --collect-only) \S+ .*\"N tests collected\"", guide, re.M
    )
    assert found is not None, "CONTRIBUTING shows how to count the tests"
    target = str(Path(__file__).relative_to(REPO))  # this file: one test, fast to collect
    args = [sys.executable, *shlex.split(found.group(1)), target]
    done = subprocess.run(args, cwd=REPO, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    last = done.stdout.strip().splitlines()[-1]
    assert re.fullmatch(r"1 test collected in [0-9.]+s", last), last
