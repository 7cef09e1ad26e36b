"""Bad names, headings and killed writers (issue 38.5 and 38.7): clear errors, nothing lost.

A killed writer's temporary file is swept by the next write (a real writer process is
SIGKILLed mid-write); names Windows reserves, control and bidi characters, over-long names
and headings with a line break are refused with a :class:`MemwellError` that the CLI prints
as one line and the tool returns as a payload.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner
from memwell.agent.write_tools import memory_write
from memwell.cli.main import cli
from memwell.contract.config import MemwellSettings
from memwell.contract.errors import PathNotAllowedError, WriteRefusedError
from memwell.contract.manager import MemorySearchManager
from memwell.writing import MemoryWriter
from memwell.writing.atomic import STALE_TEMP_SECONDS

KILLED_WRITER = textwrap.dedent(
    """
    import os, sys, time
    from memwell.contract.config import MemwellSettings
    from memwell.runtime.factory import open_memory
    from memwell.writing import MemoryWriter

    workspace = sys.argv[1]
    settings = MemwellSettings.model_validate(
        {"provider": "none", "sync": {"watch": False, "on_search": False}}
    )
    writer = MemoryWriter(open_memory(workspace, settings=settings), workspace, settings)
    real_fsync = os.fsync

    def fsync_then_hang(fd):
        real_fsync(fd)
        if os.readlink(f"/proc/self/fd/{fd}").endswith(".tmp"):
            print("temp written", flush=True)
            time.sleep(60)  # the parent's SIGKILL lands here, before the rename

    os.fsync = fsync_then_hang
    writer.append("the killed note", file="MEMORY.md")
    """
)

OpenFn = Callable[..., MemorySearchManager]


@pytest.fixture
def writer(open_ws: OpenFn, workspace: Path) -> MemoryWriter:
    return MemoryWriter(open_ws(workspace, provider="none"), workspace, MemwellSettings())


def temp_files(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir() if p.name.endswith(".tmp"))


def test_a_killed_writers_temp_file_is_swept_by_the_next_write(
    writer: MemoryWriter, workspace: Path
) -> None:
    before = (workspace / "MEMORY.md").read_bytes()
    child = subprocess.Popen(
        [sys.executable, "-c", KILLED_WRITER, str(workspace)], stdout=subprocess.PIPE, text=True
    )
    try:
        assert child.stdout is not None and child.stdout.readline().strip() == "temp written"
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait(timeout=30)
    left = temp_files(workspace)
    assert len(left) == 1 and left[0].startswith(f".MEMORY.md.{child.pid}-")
    assert (workspace / "MEMORY.md").read_bytes() == before  # the kill lost nothing
    writer.append("after the kill", file="MEMORY.md")
    assert temp_files(workspace) == []
    text = (workspace / "MEMORY.md").read_text()
    assert "after the kill" in text and "the killed note" not in text


def test_the_sweep_leaves_live_writers_and_other_files_alone(
    writer: MemoryWriter, workspace: Path
) -> None:
    live = workspace / f".MEMORY.md.{os.getpid()}-0123456789ab.tmp"  # this process: alive
    fresh_legacy = workspace / ".MEMORY.md.0123456789ab.tmp"  # an older memwell, recent
    old_legacy = workspace / ".MEMORY.md.ba9876543210.tmp"
    not_ours = workspace / ".MEMORY.md.backup.tmp"
    for path in (live, fresh_legacy, old_legacy, not_ours):
        path.write_text("partial")
    long_ago = time.time() - STALE_TEMP_SECONDS - 60
    os.utime(old_legacy, (long_ago, long_ago))
    os.utime(not_ours, (long_ago, long_ago))
    writer.append("a note", file="MEMORY.md")
    assert temp_files(workspace) == sorted(p.name for p in (live, fresh_legacy, not_ours))


@pytest.mark.parametrize(
    ("name", "why"),
    [
        ("CON", "Windows reserves"),
        ("projects/aux.md", "Windows reserves"),
        ("evil\u202etxt.md", "U+202E"),
        ("two\nlines", "U+000A"),
        ("x" * 300, "the limit is"),
    ],
)
def test_bad_names_are_refused_by_every_operation(
    writer: MemoryWriter, workspace: Path, name: str, why: str
) -> None:
    before = sorted(p.relative_to(workspace) for p in workspace.rglob("*"))
    for operation in (
        lambda: writer.append("a note", file=name),
        lambda: writer.create(name, "a note"),
        lambda: writer.replace(name, "a", "b"),
    ):
        with pytest.raises(PathNotAllowedError, match=why.replace("+", r"\+")):
            operation()
    assert sorted(p.relative_to(workspace) for p in workspace.rglob("*")) == before


def test_an_over_long_name_is_one_line_in_the_cli_and_a_payload_in_the_tool(
    writer: MemoryWriter, workspace: Path
) -> None:
    name = "x" * 300
    payload = memory_write(writer, {"text": "a note", "file": name})
    assert payload["reason"] == "not_allowed" and "the limit is" in payload["error"]
    args = ["--provider", "none", "-w", str(workspace), "write", "-f", name, "note"]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code != 0
    assert "Traceback" not in result.output
    assert [line for line in result.output.splitlines() if line.strip()] == [
        line for line in result.output.splitlines() if "the limit is" in line
    ]


@pytest.mark.parametrize("heading", ["Notes\n# Injected", "a\rb", "rtl\u202eevil"])
def test_a_heading_with_a_line_break_or_bidi_control_is_refused(
    writer: MemoryWriter, workspace: Path, heading: str
) -> None:
    before = (workspace / "MEMORY.md").read_bytes()
    with pytest.raises(WriteRefusedError, match="heading contains") as refused:
        writer.append("a note", heading=heading)
    assert refused.value.reason == "invalid"
    assert (workspace / "MEMORY.md").read_bytes() == before
