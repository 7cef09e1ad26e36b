"""The core writer on the builtin backend: each operation, each rule, visible to search."""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest
from memwell.contract.config import MemwellSettings
from memwell.contract.errors import PathNotAllowedError, WriteRefusedError
from memwell.contract.manager import MemorySearchManager
from memwell.writing import MemoryWriter
from memwell.writing.atomic import read_state, replace_file

OpenFn = Callable[..., MemorySearchManager]
TODAY = datetime(2026, 3, 4, 9, 30, tzinfo=timezone.utc)
SECRET = "sk-proj-4fG7hJ2kL9mN3pQ8rS5tV1wX"


@pytest.fixture
def memory(open_ws: OpenFn, workspace: Path) -> MemorySearchManager:
    manager = open_ws(workspace, provider="none")
    manager.sync(reason="test")
    return manager


def make_writer(memory: MemorySearchManager, workspace: Path, **write: object) -> MemoryWriter:
    settings = MemwellSettings.model_validate({"write": write})
    return MemoryWriter(memory, workspace, settings, clock=lambda: TODAY)


@pytest.fixture
def writer(memory: MemorySearchManager, workspace: Path) -> MemoryWriter:
    return make_writer(memory, workspace)


def found(memory: MemorySearchManager, query: str) -> list[str]:
    return [hit.path for hit in memory.search(query, min_score=0.0)]


def test_daily_append_creates_the_file_with_its_heading(
    writer: MemoryWriter, workspace: Path, memory: MemorySearchManager
) -> None:
    first = writer.append("Shipped the Pelican importer.")
    second = writer.append("Retro moved to Friday.\n")
    daily = workspace / "memory/2026-03-04.md"
    assert daily.read_text() == (
        "# 2026-03-04\n\nShipped the Pelican importer.\n\nRetro moved to Friday.\n"
    )
    assert (first.path, first.start_line, first.end_line, first.created) == (
        "memory/2026-03-04.md",
        3,
        3,
        True,
    )
    assert (second.start_line, second.created, second.indexed) == (5, False, True)
    assert found(memory, "Pelican importer")[:1] == ["memory/2026-03-04.md"]


def test_topic_names_map_under_memory(writer: MemoryWriter, workspace: Path) -> None:
    result = writer.append("Invoices are due on the 5th.", file="projects/billing")
    assert result.path == "memory/projects/billing.md"
    assert (workspace / result.path).read_text() == "# billing\n\nInvoices are due on the 5th.\n"
    again = writer.append("Late fees: 2%.", file="memory/projects/billing.md")
    assert again.path == result.path and again.start_line == 5


def test_heading_append_goes_into_memory_md(
    writer: MemoryWriter, workspace: Path, memory: MemorySearchManager
) -> None:
    (workspace / "MEMORY.md").write_text("# Memory\n\n## People\nAlice leads ops.\n\n## Misc\nx\n")
    result = writer.append("Bob owns the billing rewrite.", heading="People")
    assert not result.heading_created
    assert (workspace / "MEMORY.md").read_text() == (
        "# Memory\n\n## People\nAlice leads ops.\n\nBob owns the billing rewrite.\n\n## Misc\nx\n"
    )
    assert result.start_line == result.end_line == 6
    created = writer.append("Tea, no sugar.", heading="Preferences")
    assert created.heading_created
    assert (workspace / "MEMORY.md").read_text().endswith("x\n\n## Preferences\n\nTea, no sugar.\n")
    assert found(memory, "billing rewrite Bob")[:1] == ["MEMORY.md"]


def test_create_refuses_to_overwrite(writer: MemoryWriter, workspace: Path) -> None:
    made = writer.create("memory/vendors.md", "# Vendors\n\nAcme ships on Mondays.")
    assert made.created and (workspace / "memory/vendors.md").read_text().endswith("Mondays.\n")
    with pytest.raises(WriteRefusedError) as refused:
        writer.create("vendors", "clobber")
    assert refused.value.reason == "exists"
    assert "clobber" not in (workspace / "memory/vendors.md").read_text()


def test_replace_exactly_once(
    writer: MemoryWriter, workspace: Path, memory: MemorySearchManager
) -> None:
    path = workspace / "memory/projects.md"
    before = path.read_bytes()
    result = writer.replace("memory/projects.md", "forty nodes", "sixty nodes")
    assert path.read_bytes() == before.replace(b"forty nodes", b"sixty nodes")
    assert result.start_line == result.end_line == 7
    assert found(memory, "sixty")[:1] == ["memory/projects.md"]
    for old, reason in (("forty", "not_found"), ("e", "not_unique")):
        unchanged = path.read_bytes()
        with pytest.raises(WriteRefusedError) as refused:
            writer.replace("memory/projects.md", old, "y")
        assert refused.value.reason == reason
        assert path.read_bytes() == unchanged
    with pytest.raises(WriteRefusedError) as missing:
        writer.replace("memory/none/deep.md", "a", "b")
    assert missing.value.reason == "not_found" and not (workspace / "memory/none").exists()


def test_replace_keeps_crlf_bom_front_matter_and_odd_bytes(
    writer: MemoryWriter, workspace: Path
) -> None:
    raw = b"\xef\xbb\xbf---\r\ntags: [x]\r\n---\r\n# Notes\r\nold line\r\nbad \xff byte\r\n"
    path = workspace / "memory/notes.md"
    path.write_bytes(raw)
    os.chmod(path, 0o640)
    writer.replace("memory/notes.md", "old line", "new line\nsecond")
    assert path.read_bytes() == raw.replace(b"old line", b"new line\r\nsecond")
    writer.append("tail", file="memory/notes.md")
    assert path.read_bytes().endswith(b"bad \xff byte\r\n\r\ntail\r\n")
    assert (os.stat(path).st_mode & 0o777) == 0o640


@pytest.mark.parametrize(
    "target",
    [
        "../outside.md",
        "/etc/passwd.md",
        "memory/notes.txt",
        "DREAMS.md",
        "../ws/sessions/a.md",
        "memory/node_modules/x.md",
        ".memwell/x.md",
    ],
)
def test_paths_outside_the_memory_files_are_refused(
    writer: MemoryWriter, workspace: Path, target: str
) -> None:
    with pytest.raises(PathNotAllowedError):
        writer.append("nope", file=target)
    with pytest.raises(PathNotAllowedError):
        writer.create(target, "nope")
    assert not (workspace.parent / "outside.md").exists()


def test_symlinks_are_refused(writer: MemoryWriter, workspace: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "target.md").write_text("keep\n")
    (workspace / "memory/link.md").symlink_to(outside / "target.md")
    (workspace / "memory/linkdir").symlink_to(outside, target_is_directory=True)
    (workspace / "memory/inner").symlink_to(workspace / "memory", target_is_directory=True)
    for target in (
        "memory/link.md",
        "memory/linkdir/target.md",
        "memory/linkdir/new.md",
        "memory/inner/projects.md",
    ):
        with pytest.raises(PathNotAllowedError):
            writer.append("escape", file=target)
    assert (outside / "target.md").read_text() == "keep\n"
    assert sorted(p.name for p in outside.iterdir()) == ["target.md"]


def test_secrets_are_redacted_before_writing(
    writer: MemoryWriter, workspace: Path, memory: MemorySearchManager
) -> None:
    result = writer.append(f"The deploy key is {SECRET} and OPENAI_API_KEY=abc123secret.")
    text = (workspace / result.path).read_text()
    assert SECRET not in text and "abc123secret" not in text
    assert "sk-pro…V1wX" in text and "OPENAI_API_KEY=***" in text
    assert result.redacted
    clean = writer.append("No secrets here.")
    assert not clean.redacted


def test_size_limit_and_disabled(memory: MemorySearchManager, workspace: Path) -> None:
    small = make_writer(memory, workspace, max_bytes=10)
    with pytest.raises(WriteRefusedError) as big:
        small.append("x" * 11)
    assert big.value.reason == "too_large" and "max_bytes" in str(big.value)
    off = make_writer(memory, workspace, enabled=False)
    for call in (lambda: off.append("x"), lambda: off.create("memory/a.md", "x")):
        with pytest.raises(WriteRefusedError) as disabled:
            call()
        assert disabled.value.reason == "disabled"
    assert not (workspace / "memory/2026-03-04.md").exists()
    assert off.recent(1)  # listing recent activity still works read-only


def test_blank_or_nul_text_is_refused(writer: MemoryWriter) -> None:
    for text, reason in (("  \n", "blank"), ("a\x00b", "invalid"), ("\ud800", "invalid")):
        with pytest.raises(WriteRefusedError) as refused:
            writer.append(text)
        assert refused.value.reason == reason


def test_recent_lists_newest_first(writer: MemoryWriter, workspace: Path) -> None:
    for age, rel in enumerate(("MEMORY.md", "memory/projects.md", "memory/2026-01-02.md")):
        stamp = 1_700_000_000 - age * 100
        os.utime(workspace / rel, (stamp, stamp))
    writer.append("new")
    listed = writer.recent(3)
    assert [f.path for f in listed] == ["memory/2026-03-04.md", "MEMORY.md", "memory/projects.md"]
    assert listed[1].modified == datetime.fromtimestamp(1_700_000_000, tz=timezone.utc)
    assert listed[0].bytes == (workspace / "memory/2026-03-04.md").stat().st_size


def test_threads_never_lose_an_append(writer: MemoryWriter, workspace: Path) -> None:
    def worker(n: int) -> None:
        for i in range(20):
            writer.append(f"note {n}-{i}", file="memory/log.md")

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    lines = (workspace / "memory/log.md").read_text().splitlines()
    assert sorted(line for line in lines if line.startswith("note ")) == sorted(
        f"note {n}-{i}" for n in range(4) for i in range(20)
    )


def test_replace_file_refuses_a_file_changed_since_it_was_read(tmp_path: Path) -> None:
    path = tmp_path / "a.md"
    path.write_text("one\n")
    state = read_state(path)
    path.write_text("edited elsewhere\n")
    with pytest.raises(WriteRefusedError) as busy:
        replace_file(path, b"mine\n", state)
    assert busy.value.reason == "busy" and path.read_text() == "edited elsewhere\n"
    assert [p.name for p in tmp_path.iterdir()] == ["a.md"]  # no temp file left behind


def test_replace_file_returns_a_line_written_just_after_the_rename(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An editor that opened the file before the rename and writes a moment after it (it was
    preempted in between) writes into the replaced file: that line comes back to the caller
    to carry over, not lost. The editor writes at the first pause after the rename."""
    import memwell.writing.atomic as atomic

    path = tmp_path / "MEMORY.md"
    path.write_bytes(b"old\n")
    state = read_state(path)
    editor = os.open(path, os.O_WRONLY | os.O_APPEND)
    real_rename, real_sleep = os.rename, atomic.time.sleep
    renamed: list[bool] = []

    def rename(*args: Any, **kwargs: Any) -> None:
        real_rename(*args, **kwargs)
        renamed.append(True)

    def pause(seconds: float) -> None:
        if renamed and renamed.pop():
            os.write(editor, b"editor line\n")
        real_sleep(seconds)

    monkeypatch.setattr(atomic.os, "rename", rename)
    monkeypatch.setattr(atomic.time, "sleep", pause)
    try:
        late = replace_file(path, b"mine\n", state)
    finally:
        os.close(editor)
    assert late == b"old\neditor line\n"
    assert path.read_bytes() == b"mine\n"


def test_a_sync_joining_a_running_one_still_sees_the_write(
    open_ws: OpenFn, workspace: Path
) -> None:
    """A sync that started before the write must not satisfy the writer's own sync."""
    memory = open_ws(workspace, provider="none")
    memory.sync(reason="test")
    (workspace / "memory/slow.md").write_text("# slow\n\nfiller\n")
    listed, release = threading.Event(), threading.Event()

    def slow_progress(_: object) -> None:
        listed.set()
        release.wait(10)

    background = threading.Thread(target=lambda: memory.sync(progress=slow_progress))
    background.start()
    assert listed.wait(10)  # the background sync has listed the files
    writer = MemoryWriter(memory, workspace, clock=lambda: TODAY)
    threading.Timer(0.2, release.set).start()
    result = writer.append("Wombatcoin is the new codename.")
    background.join()
    assert result.indexed
    assert found(memory, "Wombatcoin")[:1] == [result.path]
