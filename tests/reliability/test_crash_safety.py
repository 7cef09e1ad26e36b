"""Crash safety: SIGKILL a child process mid-reindex or mid-sync, then check the index.

Each trial freezes the child at a seeded event (an SQLite progress tick, an embedding batch,
a step of publishing a generation) or kills it after a seeded delay. Afterwards the index
must open without being taken for damaged, hold exactly the old or the new content (per file,
for incremental syncs), pass SQLite's and FTS5's integrity checks, and answer searches.
Damaged index files are detected when opened and rebuilt from the Markdown with a warning.
"""

from __future__ import annotations

import logging
import os
import random
import re
import signal
import subprocess
import sys
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
from memwell.contract.config import MemwellSettings
from memwell.registry.plugins import PluginRegistry
from memwell_sqlite.driver import connect, sqlite_module
from memwell_sqlite.index_files import PublishedIndex
from memwell_sqlite.layout import IndexDir
from reliability_helpers import (
    COUNTS,
    HERE,
    LineReader,
    Snapshot,
    build_manager,
    corpus_path,
    disk_files,
    expected_snapshot,
    file_text,
    generation_files,
    index_root,
    make_corpus,
    make_registry,
    make_settings,
    sha256,
    snapshot_workspace,
    write_files,
)

SEED = 20260801
FILES = 150
CHILD = HERE / "crash_child.py"
CODEWORD = re.compile(r"Codeword (\w+) marks")
LAYOUT_STEPS = ("replace", "published", "discard")


def run_child(
    tmp: Path,
    workspace: Path,
    mode: str,
    stop: str,
    *,
    sleep_ms: int = 0,
    delay: float | None = None,
) -> tuple[str, int]:
    """Run one sync in a child; SIGKILL it at its stop event or after ``delay`` seconds.

    Returns ``("killed", 0)`` or ``("completed", events the child counted)``.
    """
    err = tmp / "child-stderr.txt"
    with err.open("wb") as err_fh:
        proc = subprocess.Popen(
            [sys.executable, str(CHILD), str(workspace), mode, stop, str(sleep_ms)],
            stdout=subprocess.PIPE,
            stderr=err_fh,
        )
    reader = LineReader(proc)
    try:
        if reader.until(["ready"], 120) is None:
            pytest.fail(f"child never got ready: {err.read_text()}")
        if delay is not None:
            line = reader.until(["done"], delay)
        else:
            line = reader.until(["stop", "done"], 120)
            if line is None:
                pytest.fail(f"child neither stopped nor finished: {err.read_text()}")
        if line is not None and line.startswith("done"):
            assert proc.wait(timeout=60) == 0, err.read_text()
            return "completed", int(line.split()[1])
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=60)
        return "killed", 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=60)
        assert proc.stdout is not None
        proc.stdout.close()


class Trials:
    """A workspace, the content of every version written, and the index checks."""

    def __init__(self, workspace: Path) -> None:
        self.workspace = workspace
        self.settings: MemwellSettings = make_settings()
        self.registry: PluginRegistry = make_registry()
        self.texts: dict[str, str] = {}

    def write(self, files: Mapping[str, str]) -> None:
        write_files(self.workspace, files)
        self.texts.update({sha256(t): t for t in files.values()})

    def expected(self) -> Snapshot:
        return expected_snapshot(
            self.settings, self.registry, self.workspace, disk_files(self.workspace)
        )

    def build(self) -> Snapshot:
        manager = build_manager(self.workspace, self.settings, self.registry)
        try:
            manager.sync()
        finally:
            manager.close()
        snap = snapshot_workspace(self.workspace)
        assert snap == self.expected()
        return snap

    def check_search(self, snap: Snapshot, rng: random.Random) -> None:
        """The index opens as-is (nothing quarantined) and finds sampled files by codeword."""
        manager = build_manager(self.workspace, self.settings, self.registry)
        try:
            assert manager.status().custom["recovered"] == []
            keys = sorted(snap.files)
            for key in rng.sample(keys, min(3, len(keys))):
                path = key.split(":", 1)[1]
                word = CODEWORD.search(self.texts[snap.files[key]])
                assert word is not None
                hits = manager.search(word.group(1), min_score=0.0)
                assert hits, f"no results for {word.group(1)} while memory files exist"
                assert path in [hit.path for hit in hits[:3]]
            assert manager.status().custom["recovered"] == []
        finally:
            manager.close()

    def finish(self) -> None:
        """A clean sync converges on the files on disk and leaves no stray generations."""
        manager = build_manager(self.workspace, self.settings, self.registry)
        try:
            manager.sync()
            assert manager.status().custom["recovered"] == []
        finally:
            manager.close()
        assert snapshot_workspace(self.workspace) == self.expected()
        current = IndexDir(index_root(self.workspace)).current()
        assert current is not None
        leftovers = generation_files(self.workspace)
        assert leftovers == [current.name], leftovers


def test_sigkill_during_full_reindex(tmp_path: Path) -> None:
    rng = random.Random(SEED)
    trials = Trials(tmp_path / "ws")
    trials.write(make_corpus(FILES, 1, SEED))
    published = trials.build()

    # Calibration: an uninterrupted forced reindex of version 2 counts the events.
    trials.write(make_corpus(FILES, 2, SEED))
    started = time.monotonic()
    outcome, total = run_child(tmp_path, trials.workspace, "full", "0", sleep_ms=40)
    duration = time.monotonic() - started
    assert outcome == "completed" and total > 100
    published = snapshot_workspace(trials.workspace)
    assert published == trials.expected()

    plan: list[tuple[str, float | str]] = [("event", str(rng.randint(1, total))) for _ in range(20)]
    plan += [("event", step) for step in LAYOUT_STEPS]
    plan += [("delay", rng.uniform(0.0, duration * 1.2)) for _ in range(2)]
    version = 2
    for number, (kind, value) in enumerate(plan):
        version += 1
        files = make_corpus(FILES, version, SEED)
        if number % 3 == 2:  # some trials also delete and add files
            for gone in rng.sample(sorted(files)[1:], 3):
                (trials.workspace / gone).unlink(missing_ok=True)
                del files[gone]
            files.update(
                {
                    corpus_path(FILES + number * 2 + k): file_text(FILES + k, version, SEED)
                    for k in (0, 1)
                }
            )
        trials.write(files)
        new = trials.expected()
        if kind == "delay":
            outcome, _ = run_child(
                tmp_path, trials.workspace, "full", "0", sleep_ms=40, delay=float(value)
            )
        else:
            outcome, _ = run_child(tmp_path, trials.workspace, "full", str(value))
        COUNTS["crash trials"] += 1
        found = snapshot_workspace(trials.workspace)
        assert found in (published, new), f"trial {number} ({kind} {value}): mixed index"
        if outcome == "completed":
            assert found == new
        if found == published:
            COUNTS["kills mid-write"] += 1
        trials.check_search(found, rng)
        published = found
    trials.finish()


def test_sigkill_during_the_first_index(tmp_path: Path) -> None:
    """Killed before anything was published: the next search builds the index itself."""
    trials = Trials(tmp_path / "ws")
    trials.write(make_corpus(60, 1, SEED))
    outcome, _ = run_child(tmp_path, trials.workspace, "full", "40")
    assert outcome == "killed"
    COUNTS["crash trials"] += 1
    COUNTS["kills mid-write"] += 1
    assert IndexDir(index_root(trials.workspace)).current() is None
    manager = build_manager(trials.workspace, trials.settings, trials.registry)
    try:
        assert manager.search("meadow", min_score=0.0), "empty while memory files exist"
    finally:
        manager.close()
    assert snapshot_workspace(trials.workspace) == trials.expected()
    current = IndexDir(index_root(trials.workspace)).current()
    assert current is not None and generation_files(trials.workspace) == [current.name]


def mutate(
    files: dict[str, str], rng: random.Random, version: int, next_index: list[int]
) -> dict[str, str]:
    """Rewrite about a third of the files, delete four and add four."""
    paths = sorted(files)
    for path in rng.sample(paths, len(paths) // 3):
        index = int(re.sub(r"\D", "", Path(path).stem) or 0)
        files[path] = file_text(index, version, SEED, long=index % 7 == 3)
    for path in rng.sample([p for p in paths if p != "MEMORY.md"], 4):
        del files[path]
    for _ in range(4):
        files[corpus_path(next_index[0])] = file_text(next_index[0], version, SEED)
        next_index[0] += 1
    return files


def allowed_states(
    before: Snapshot, after: Snapshot, key: str
) -> list[tuple[str, frozenset] | None]:
    states: list[tuple[str, frozenset] | None] = []
    for snap in (before, after):
        states.append((snap.files[key], snap.chunks[key]) if key in snap.files else None)
    return states


def test_sigkill_during_incremental_sync(tmp_path: Path) -> None:
    rng = random.Random(SEED + 1)
    trials = Trials(tmp_path / "ws")
    files = make_corpus(FILES, 1, SEED)
    trials.write(files)
    published = trials.build()
    next_index = [FILES]

    files = mutate(files, rng, 2, next_index)
    sync_to(trials, files)
    outcome, total = run_child(tmp_path, trials.workspace, "incremental", "0")
    assert outcome == "completed" and total > 20
    published = snapshot_workspace(trials.workspace)
    assert published == trials.expected()

    plan: list[tuple[str, float | str]] = [("event", "") for _ in range(8)]
    plan += [("delay", rng.uniform(0.0, 0.6)) for _ in range(2)]
    for number, (kind, value) in enumerate(plan, start=3):
        files = mutate(files, rng, number, next_index)
        sync_to(trials, files)
        new = trials.expected()
        if kind == "delay":
            outcome, _ = run_child(
                tmp_path, trials.workspace, "incremental", "0", sleep_ms=40, delay=float(value)
            )
        else:
            stop = str(rng.randint(1, total))
            outcome, _ = run_child(tmp_path, trials.workspace, "incremental", stop)
        COUNTS["crash trials"] += 1
        found = snapshot_workspace(trials.workspace)
        for key in set(published.files) | set(new.files) | set(found.files):
            state = (found.files[key], found.chunks[key]) if key in found.files else None
            assert state in allowed_states(published, new, key), f"trial {number}: {key} mixed"
        if outcome == "completed":
            assert found == new
        elif found != new:
            COUNTS["kills mid-write"] += 1
        trials.check_search(found, rng)
        published = found
    trials.finish()


def sync_to(trials: Trials, files: Mapping[str, str]) -> None:
    """Make the workspace hold exactly ``files``."""
    for path in disk_files(trials.workspace):
        if path not in files:
            (trials.workspace / path).unlink()
    trials.write(files)


def damage(db: Path, kind: str, rng: random.Random) -> None:
    size = db.stat().st_size
    if kind == "truncated-half":
        os.truncate(db, size // 2)
    elif kind == "truncated-odd":
        os.truncate(db, size - 1000)
    elif kind == "empty":
        os.truncate(db, 0)
    elif kind == "garbage":
        db.write_bytes(bytes(rng.getrandbits(8) for _ in range(size)))
    elif kind == "header-zeroed":
        with db.open("r+b") as fh:
            fh.write(b"\0" * 100)
    elif kind == "wal-garbage":
        Path(f"{db}-wal").write_bytes(bytes(rng.getrandbits(8) for _ in range(8192)))
    elif kind == "meta-garbage":
        conn, _ = connect(db)
        with conn:
            conn.execute("UPDATE meta SET value = '{not json'")
        conn.close()
    elif kind.startswith("pages"):
        page = 4096
        with db.open("r+b") as fh:
            for number in rng.sample(range(1, size // page), 3):
                fh.seek(number * page)
                fh.write(bytes(rng.getrandbits(8) for _ in range(page)))
    else:  # pragma: no cover
        raise AssertionError(kind)


DAMAGE = (
    "truncated-half",
    "truncated-odd",
    "empty",
    "garbage",
    "header-zeroed",
    "wal-garbage",
    "meta-garbage",
    *(f"pages-{n}" for n in range(8)),
)


def _damaged(
    tmp_path: Path, kind: str, rng: random.Random, files: int, caplog: pytest.LogCaptureFixture
) -> tuple[Trials, Any]:
    """A built workspace of ``files`` files whose current index file got ``kind`` damage."""
    trials = Trials(tmp_path / "ws")
    trials.write(make_corpus(files, 1, SEED))
    snap = trials.build()
    db = IndexDir(index_root(trials.workspace)).current()
    assert db is not None
    damage(db, kind, rng)
    COUNTS["faults injected"] += 1
    caplog.set_level(logging.WARNING)
    return trials, snap


@pytest.mark.parametrize("kind", DAMAGE)
def test_damaged_index_is_detected_and_rebuilt(
    tmp_path: Path, kind: str, caplog: pytest.LogCaptureFixture
) -> None:
    rng = random.Random(f"{SEED}:{kind}")
    trials, snap = _damaged(tmp_path, kind, rng, 60, caplog)
    manager = build_manager(trials.workspace, trials.settings, trials.registry)
    try:
        manager.status()
        for key in rng.sample(sorted(snap.files), 5):
            word = CODEWORD.search(trials.texts[snap.files[key]])
            assert word is not None
            hits = manager.search(word.group(1), min_score=0.0)
            assert key.split(":", 1)[1] in [hit.path for hit in hits[:3]], kind
        recovered = manager.status().custom["recovered"]
        if recovered:
            COUNTS["corruptions detected"] += 1
            assert any("damaged" in r.getMessage() for r in caplog.records)
        elif kind != "wal-garbage" and not kind.startswith("pages"):
            pytest.fail(f"{kind}: damage not detected")
        trials.write({corpus_path(1): file_text(1, 2, SEED)})
        manager.sync()  # incremental, on whatever the damage left
        manager.sync(force=True)
    finally:
        manager.close()
    assert snapshot_workspace(trials.workspace) == trials.expected()


def test_transient_open_error_does_not_quarantine_a_healthy_index(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    trials = Trials(tmp_path / "ws")
    trials.write(make_corpus(10, 1, SEED))
    snap = trials.build()
    original = PublishedIndex.open_store
    calls = [0]

    def locked_once(self: PublishedIndex, path: Path, **kwargs: bool) -> object:
        calls[0] += 1
        if calls[0] == 1:
            raise sqlite_module().OperationalError("database is locked")
        return original(self, path, **kwargs)

    monkeypatch.setattr(PublishedIndex, "open_store", locked_once)
    manager = build_manager(trials.workspace, trials.settings, trials.registry)
    try:
        with pytest.raises(Exception, match="locked"):
            manager.search("meadow", min_score=0.0)
        COUNTS["faults injected"] += 1
        assert manager.search("meadow", min_score=0.0)
        assert manager.status().custom["recovered"] == []
    finally:
        manager.close()
    assert snapshot_workspace(trials.workspace) == snap


@pytest.mark.parametrize("kind", ["truncated-half", "garbage", "header-zeroed", "meta-garbage"])
def test_damaged_index_found_by_a_sync_is_rebuilt_with_a_warning(
    tmp_path: Path, kind: str, caplog: pytest.LogCaptureFixture
) -> None:
    rng = random.Random(f"{SEED}:sync:{kind}")
    trials, _ = _damaged(tmp_path, kind, rng, 30, caplog)
    manager = build_manager(trials.workspace, trials.settings, trials.registry)
    try:
        manager.sync()
        assert manager.status().custom["recovered"], kind
        assert any("damaged" in r.getMessage() for r in caplog.records)
        COUNTS["corruptions detected"] += 1
    finally:
        manager.close()
    assert snapshot_workspace(trials.workspace) == trials.expected()
    assert not any(p.name.endswith("-wal") for p in index_root(trials.workspace).iterdir())
