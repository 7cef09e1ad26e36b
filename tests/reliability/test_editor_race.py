"""An editor appending to ``MEMORY.md`` while memwell writes it loses no line (issue 38.3).

A separate process appends numbered lines at a high rate, opening and closing the file for
each line as an editor or a shell ``>>`` does, and never takes memwell's lock. Meanwhile the
writer appends notes, at the end and under a heading in the middle. At the end every editor
line and every memwell note is in the file exactly once. Bounded: the editor stops itself
after a deadline, and the test after a fixed number of writes.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from memwell.contract.config import MemwellSettings
from memwell.runtime.factory import close_all, open_memory
from memwell.writing import MemoryWriter, atomic
from reliability_helpers import write_files

EDITOR = textwrap.dedent(
    """
    import os, sys, time
    path, stop = sys.argv[1], sys.argv[2]
    deadline = time.monotonic() + 60
    count = 0
    print("ready", flush=True)
    while not os.path.exists(stop) and time.monotonic() < deadline:
        with open(path, "a") as handle:
            handle.write(f"editor line {count}\\n")
        count += 1
        time.sleep(0.0005)
    print(count, flush=True)
    """
)
NOTES = 150


def test_no_editor_line_and_no_memwell_note_is_lost(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    write_files(workspace, {"MEMORY.md": "# Memory\n\n## Notes\n\nfirst note\n\n## Log\n\n"})
    memory_md = workspace / "MEMORY.md"
    stop = tmp_path / "stop"
    writer = _writer(workspace)
    editor = subprocess.Popen(
        [sys.executable, "-c", EDITOR, str(memory_md), str(stop)],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert editor.stdout is not None
        assert editor.stdout.readline().strip() == "ready"
        for number in range(NOTES):
            if number % 2:
                writer.append(f"memwell note {number}", heading="Notes")
            else:
                writer.append(f"memwell note {number}", file="MEMORY.md")
    finally:
        stop.touch()
        out, _ = editor.communicate(timeout=70)
        close_all()
    written = int(out.split()[-1])
    assert written > NOTES  # the editor really wrote throughout
    lines = memory_md.read_text().splitlines()
    editor_lines = [line for line in lines if line.startswith("editor line ")]
    notes = [line for line in lines if line.startswith("memwell note ")]
    assert sorted(editor_lines) == sorted(f"editor line {n}" for n in range(written))
    assert sorted(notes) == sorted(f"memwell note {n}" for n in range(NOTES))
    assert lines.count("## Notes") == 1 and lines.count("## Log") == 1


def _writer(workspace: Path) -> MemoryWriter:
    settings = MemwellSettings.model_validate(
        {"provider": "none", "sync": {"watch": False, "on_search": False}}
    )
    return MemoryWriter(open_memory(workspace, settings=settings), workspace, settings)


@pytest.mark.parametrize(
    ("edit", "expected"),
    [
        # An editor appends in the window between the writer's last check and its rename.
        (lambda f: f.write_text(f.read_text() + "editor line\n"), "editor line"),
        # An editor rewrites a line in place (same inode) in that window.
        (lambda f: f.write_text(f.read_text().replace("first note", "FIRST NOTE")), "FIRST NOTE"),
    ],
)
def test_an_edit_between_the_check_and_the_rename_is_kept(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    edit: Callable[[Path], object],
    expected: str,
) -> None:
    workspace = tmp_path / "ws"
    write_files(workspace, {"MEMORY.md": "# Memory\n\n## Notes\n\nfirst note\n\n## Log\n\n"})
    memory_md = workspace / "MEMORY.md"
    writer = _writer(workspace)
    real_rename = os.rename
    edits: list[str] = []

    def rename_after_an_edit(src: str, dst: str, **kwargs: Any) -> None:
        if not edits and dst == "MEMORY.md":
            edits.append(dst)
            edit(memory_md)  # in place: the file the writer checked is the one changed
        real_rename(src, dst, **kwargs)

    monkeypatch.setattr(atomic.os, "rename", rename_after_an_edit)
    try:
        result = writer.append("memwell note", heading="Notes")
    finally:
        close_all()
    text = memory_md.read_text()
    assert edits and expected in text
    assert text.count("memwell note") == 1 and text.count("## Notes") == 1
    assert text.splitlines()[result.start_line - 1] == "memwell note"
