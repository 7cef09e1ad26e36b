"""The audit log: one line per write from every channel, never the text, append-only, and a
broken or unwritable log never stops a write."""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable
from datetime import datetime, timezone
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import given
from hypothesis import strategies as st
from memwell.agent.session_capture import save_session
from memwell.agent.tools import execute_tool
from memwell.cli.main import cli
from memwell.contract.config import MemwellSettings
from memwell.contract.manager import MemorySearchManager
from memwell.writing import MemoryWriter
from memwell.writing.audit import AUDIT_LOG, audit_line

OpenFn = Callable[..., MemorySearchManager]
TODAY = datetime(2026, 3, 4, 9, 30, tzinfo=timezone.utc)
SECRET = "sk-proj-4fG7hJ2kL9mN3pQ8rS5tV1wX"


@pytest.fixture
def memory(open_ws: OpenFn, workspace: Path) -> MemorySearchManager:
    manager = open_ws(workspace, provider="none")
    manager.sync(reason="test")
    return manager


def make_writer(memory: MemorySearchManager, workspace: Path, channel: str) -> MemoryWriter:
    return MemoryWriter(
        memory,
        workspace,
        MemwellSettings(),
        clock=lambda: TODAY,
        channel=channel,  # type: ignore[arg-type]
    )


def audit(workspace: Path) -> list[list[str]]:
    return [line.split("\t") for line in (workspace / AUDIT_LOG).read_text().splitlines()]


def test_an_api_write_is_one_line_with_the_hash_and_never_the_text(
    memory: MemorySearchManager, workspace: Path
) -> None:
    writer = make_writer(memory, workspace, "api")
    note = f"The staging token is {SECRET} and the door code is 4711."
    result = writer.append(note)
    assert result.audit_error is None
    [line] = audit(workspace)
    stamp, channel, operation, path, lines, digest = line
    assert datetime.strptime(stamp, "%Y-%m-%dT%H:%M:%SZ")
    assert (channel, operation, path) == ("api", "append", "memory/2026-03-04.md")
    assert lines == f"L{result.start_line}-L{result.end_line}"
    written = (workspace / path).read_text().splitlines()[result.start_line - 1]
    assert digest == "sha256:" + hashlib.sha256(written.encode()).hexdigest()
    log = (workspace / AUDIT_LOG).read_text()
    assert SECRET not in log and "4711" not in log and "door code" not in log


def test_edit_capture_and_each_operation_append_in_order(
    memory: MemorySearchManager, workspace: Path
) -> None:
    writer = make_writer(memory, workspace, "watch")
    writer.create("topics/billing", "Invoices go out on the 1st.")
    writer.replace("topics/billing", "1st", "2nd")
    messages = [{"role": "user", "content": "Remember the billing cutoff moved."}]
    saved = save_session(writer, messages, now=TODAY)
    rows = audit(workspace)
    assert [(r[1], r[2], r[3]) for r in rows] == [
        ("watch", "create", "memory/topics/billing.md"),
        ("watch", "replace", "memory/topics/billing.md"),
        ("watch", "capture", saved.path),
    ]


def test_cli_and_agent_tool_channels(memory: MemorySearchManager, workspace: Path) -> None:
    result = CliRunner().invoke(
        cli, ["--provider", "none", "-w", str(workspace), "write", "From the shell."]
    )
    assert result.exit_code == 0, result.output
    tool_writer = make_writer(memory, workspace, "mcp")
    payload = execute_tool("memory_write", {"text": "From an agent."}, memory, writer=tool_writer)
    assert payload["written"] is True and "audit_error" not in payload
    assert [r[1] for r in audit(workspace)] == ["cli", "mcp"]


def test_a_broken_last_line_is_closed_and_the_write_goes_on(
    memory: MemorySearchManager, workspace: Path
) -> None:
    log = workspace / AUDIT_LOG
    log.parent.mkdir(parents=True)
    log.write_bytes(b"2026-03-04T09:00:00Z\tapi\tapp")  # a crash mid-line
    make_writer(memory, workspace, "api").append("After the crash.")
    lines = log.read_bytes().split(b"\n")
    assert lines[0] == b"2026-03-04T09:00:00Z\tapi\tapp" and lines[-1] == b""
    assert lines[1].split(b"\t")[2] == b"append" and len(lines) == 3


def test_an_unwritable_log_never_stops_the_write(
    memory: MemorySearchManager, workspace: Path, caplog: pytest.LogCaptureFixture
) -> None:
    (workspace / "memory/meta").write_text("a file where the directory should be\n")
    result = make_writer(memory, workspace, "api").append("Still written.")
    assert "Still written." in (workspace / result.path).read_text()
    assert result.audit_error is not None and "audit log not written" in result.audit_error
    assert "audit log not written" in caplog.text


def test_a_symlinked_meta_directory_is_refused(
    memory: MemorySearchManager, workspace: Path, tmp_path: Path
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    os.symlink(outside, workspace / "memory/meta")
    result = make_writer(memory, workspace, "api").append("Kept inside.")
    assert result.audit_error is not None and "symlink" in result.audit_error
    assert list(outside.iterdir()) == []


def test_an_unknown_channel_is_refused(memory: MemorySearchManager, workspace: Path) -> None:
    with pytest.raises(ValueError, match="channel must be one of cli, mcp, api, watch"):
        make_writer(memory, workspace, "email")


@given(
    operation=st.text(max_size=20),
    path=st.text(max_size=60),
    content=st.binary(max_size=64),
)
def test_an_audit_line_is_always_one_line_of_six_fields(
    operation: str, path: str, content: bytes
) -> None:
    line = audit_line(
        when=TODAY,
        channel="api",
        operation=operation,
        path=path,
        start_line=1,
        end_line=2,
        content=content,
    )
    assert line.endswith("\n") and line.count("\n") == 1 and "\r" not in line
    fields = line[:-1].split("\t")
    assert len(fields) == 6 and fields[5] == "sha256:" + hashlib.sha256(content).hexdigest()
