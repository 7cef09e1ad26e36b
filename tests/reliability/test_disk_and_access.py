"""Out of disk space, quarantine hygiene and read-only index directories (issue 14, 2-4).

The out-of-space trials run on a small tmpfs each test mounts for itself (root only; skipped
with the reason elsewhere): the index lives there, the Markdown outside. A sync that runs
out of space must fail with an error naming disk space, quarantine nothing, delete no WAL,
and leave the old index serving; once space is freed the next sync converges. A read-only
index directory (a remounted tmpfs, or a directory without write permission) is searched
as it is.
"""

from __future__ import annotations

import errno
import os
import random
import re
import shutil
import stat
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from memwell.cli.main import main as cli_main
from memwell_sqlite.driver import connect
from memwell_sqlite.faults import IndexDiskFullError, IndexReadOnlyError
from memwell_sqlite.layout import IndexDir
from memwell_sqlite.manager import SqliteMemoryManager
from reliability_helpers import (
    COUNTS,
    Snapshot,
    build_manager,
    disk_files,
    expected_snapshot,
    make_corpus,
    make_registry,
    make_settings,
    sha256,
    snapshot_file,
    write_files,
)

SEED = 1414
FILES = 40
CODEWORD = re.compile(r"Codeword (\w+) marks")


def _mount(mnt: Path, options: str) -> str | None:
    """Mount a tmpfs at ``mnt``; the reason it cannot be done, or ``None``."""
    if os.geteuid() != 0:
        return "mounting a tmpfs needs root"
    if shutil.which("mount") is None:
        return "no mount command"
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(mnt)],
        capture_output=True,
        text=True,
        check=False,
    )
    return None if done.returncode == 0 else f"mount failed: {done.stderr.strip()}"


@pytest.fixture
def small_fs(tmp_path: Path) -> Iterator[Path]:
    """A 6 MB tmpfs mounted for this test only (skipped with the reason where impossible)."""
    mnt = tmp_path / "small"
    mnt.mkdir()
    reason = _mount(mnt, "size=6m")
    if reason is not None:
        pytest.skip(f"out-of-space trials need a small filesystem: {reason}")
    try:
        yield mnt
    finally:
        subprocess.run(["umount", "-l", str(mnt)], check=False)


def fill(mnt: Path, leave: int) -> Path:
    """Fill the filesystem at ``mnt`` until about ``leave`` bytes remain free."""
    filler = mnt / "filler"
    block = b"\0" * 65536
    with filler.open("wb", buffering=0) as fh:
        try:
            while True:
                fh.write(block)
        except OSError as exc:
            assert exc.errno == errno.ENOSPC
    size = filler.stat().st_size
    os.truncate(filler, max(0, size - leave))
    return filler


class Workspace:
    """Markdown in ``root/ws``; the index in ``index_root`` (on the small filesystem)."""

    def __init__(self, root: Path, index_root: Path) -> None:
        self.workspace = root / "ws"
        self.index = IndexDir(index_root)
        self.settings = make_settings(store={"path": str(index_root)})
        self.registry = make_registry()
        self.texts: dict[str, str] = {}

    def manager(self) -> SqliteMemoryManager:
        return build_manager(self.workspace, self.settings, self.registry)

    def expected(self) -> object:
        files = disk_files(self.workspace)
        return expected_snapshot(self.settings, self.registry, self.workspace, files)

    def quarantined(self) -> list[str]:
        return sorted(p.name for p in self.index.root.glob("*.corrupt-*"))

    def copies(self) -> list[str]:
        """Quarantined database files (without their side files)."""
        return [n for n in self.quarantined() if not n.endswith(("-wal", "-shm", "-journal"))]

    def build(self) -> Path:
        """Index version 1 of the corpus; the published file."""
        self.write(make_corpus(FILES, 1, SEED))
        manager = self.manager()
        manager.sync()
        manager.close()
        current = self.index.current()
        assert current is not None
        return current

    def write(self, files: dict[str, str]) -> None:
        write_files(self.workspace, files)
        self.texts.update({sha256(t): t for t in files.values()})

    def serves(
        self, manager: SqliteMemoryManager, rng: random.Random, snap: Snapshot | None = None
    ) -> None:
        """Searches find sampled files of ``snap`` (default: the published index) by the
        codeword they were indexed with, or (a sync that stopped part way) their new one."""
        if snap is None:
            current = self.index.current()
            assert current is not None, "no published index"
            snap = snapshot_file(current)
        for key in rng.sample(sorted(snap.files), 4):
            path = key.split(":", 1)[1]
            texts = (self.texts[snap.files[key]], (self.workspace / path).read_text("utf-8"))
            found = []
            for text in texts:
                word = CODEWORD.search(text)
                assert word is not None
                found += [hit.path for hit in manager.search(word.group(1), min_score=0.0)[:3]]
            assert path in found, (path, found)


@pytest.mark.parametrize("mode", ["incremental", "forced"])
def test_out_of_space_keeps_the_old_index_serving(
    tmp_path: Path, small_fs: Path, mode: str
) -> None:
    rng = random.Random(f"{SEED}:{mode}")
    ws = Workspace(tmp_path, small_fs / "idx")
    ws.build()
    for trial, leave in enumerate((0, 8192, 40_000, 120_000, 400_000)):
        current = ws.index.current()
        assert current is not None
        published = snapshot_file(current)
        ws.write(make_corpus(FILES, trial + 2, SEED))
        filler = fill(small_fs, leave)
        manager = ws.manager()
        try:
            try:
                manager.sync(force=mode == "forced")
                ran_out = False
            except IndexDiskFullError as exc:
                ran_out = True
                assert "disk space" in str(exc)
                assert "disk space" in (manager.status().last_sync_error or "")
            COUNTS["out-of-space trials"] += 1
            assert ws.quarantined() == [], f"leave={leave}: a healthy index was quarantined"
            assert manager.status().custom["recovered"] == []
            ws.serves(manager, rng, published)
        finally:
            manager.close()
        reopened = ws.manager()  # a new process's view: opens as-is, nothing quarantined
        try:
            ws.serves(reopened, rng, published)
            assert reopened.status().custom["recovered"] == [] and ws.quarantined() == []
        finally:
            reopened.close()
        filler.unlink()
        if ran_out:
            COUNTS["faults injected"] += 1
        manager = ws.manager()
        try:
            manager.sync()
            assert manager.status().last_sync_error is None
        finally:
            manager.close()
        current = ws.index.current()
        assert current is not None and snapshot_file(current) == ws.expected()
    assert ws.quarantined() == []


def test_a_checkpoint_that_ran_out_of_space_is_not_taken_for_damage(
    tmp_path: Path, small_fs: Path
) -> None:
    """The issue's case: the main file is shorter than its header says because a checkpoint
    stopped at ENOSPC; the WAL still holds every page. SQLite reads it whole."""
    ws = Workspace(tmp_path, small_fs / "idx")
    db = ws.build()
    holder, _ = connect(db, load_vec=False)  # keeps the WAL from being checkpointed on close
    holder.execute("PRAGMA wal_autocheckpoint = 0")
    with holder:
        holder.execute("CREATE TABLE ballast (x BLOB)")
        holder.executemany("INSERT INTO ballast VALUES (?)", [(os.urandom(4000),)] * 300)
    filler = fill(small_fs, 200_000)
    try:
        holder.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    except Exception as exc:
        assert "full" in str(exc).lower()
    header_pages = int.from_bytes(db.read_bytes()[28:32], "big")
    if db.stat().st_size >= header_pages * 4096:
        holder.close()
        pytest.skip("the checkpoint completed; the short-main-file state did not arise")
    wal = Path(f"{db}-wal")
    wal_size = wal.stat().st_size
    assert wal_size > 0
    reader = ws.manager()
    try:
        word = CODEWORD.search((ws.workspace / "MEMORY.md").read_text(encoding="utf-8"))
        assert word is not None
        assert [h.path for h in reader.search(word.group(1), min_score=0.0)][:1] == ["MEMORY.md"]
        with pytest.raises(IndexDiskFullError, match="disk space"):
            ws.write(make_corpus(FILES, 2, SEED))
            reader.sync(force=True)
        assert ws.quarantined() == [] and reader.status().custom["recovered"] == []
        assert wal.exists(), "the WAL holding the data was deleted"
        COUNTS["out-of-space trials"] += 1
    finally:
        reader.close()
        holder.close()
        filler.unlink()
    manager = ws.manager()
    try:
        manager.sync()
    finally:
        manager.close()
    current = ws.index.current()
    assert current is not None and snapshot_file(current) == ws.expected()


def _truncate_half(db: Path) -> None:
    os.truncate(db, db.stat().st_size // 2)


def test_status_never_quarantines_and_one_quarantined_copy_is_kept(tmp_path: Path) -> None:
    ws = Workspace(tmp_path, tmp_path / "ws" / ".memwell")
    ws.build()
    for trial in range(3):
        db = ws.index.current()
        assert db is not None
        _truncate_half(db)
        before = db.stat().st_size
        looker = build_manager(ws.workspace, ws.settings, ws.registry)
        status = looker.status()
        looker.close()
        assert db.exists() and db.stat().st_size == before, "status changed the index"
        assert ws.index.current() == db
        notes = status.custom["index_notes"]
        assert any("damaged" in note for note in notes), notes
        repair = ws.manager()
        try:
            repair.sync()
            assert repair.status().custom["recovered"]
        finally:
            repair.close()
        COUNTS["corruptions detected"] += 1
        assert len(ws.copies()) == 1, f"trial {trial}: quarantined {ws.quarantined()}"
    current = ws.index.current()
    assert current is not None and snapshot_file(current) == ws.expected()


def _write_config(workspace: Path, index_root: Path) -> None:
    (workspace / "memwell.toml").write_text(
        f'provider = "none"\n[store]\npath = "{index_root}"\n', encoding="utf-8"
    )


def _cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    try:
        cli_main(list(args))
        code = 0
    except SystemExit as exc:
        code = int(exc.code or 0)
    out = capsys.readouterr()
    return code, out.out, out.err


def test_index_after_a_quarantine_whose_rebuild_fails_says_so(
    tmp_path: Path, small_fs: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ws = Workspace(tmp_path, small_fs / "idx")
    ws.write(make_corpus(FILES, 1, SEED))
    _write_config(ws.workspace, ws.index.root)
    code, out, err = _cli(capsys, "-w", str(ws.workspace), "index")
    assert code == 0 and f"indexed {FILES} files" in out, (out, err)
    db = ws.index.current()
    assert db is not None
    _truncate_half(db)
    filler = fill(small_fs, 0)
    code, out, err = _cli(capsys, "-w", str(ws.workspace), "index")
    assert code != 0 and "disk space" in err, (code, out, err)
    assert "indexed 0 files" not in out
    pointer = ws.index.root / "CURRENT"
    assert not pointer.exists() or ws.index.current() is not None, "pointer at a missing file"
    COUNTS["out-of-space trials"] += 1
    filler.unlink()
    code, out, err = _cli(capsys, "-w", str(ws.workspace), "index")
    assert code == 0 and f"indexed {FILES} files" in out, (out, err)
    assert len(ws.copies()) == 1, ws.quarantined()


@pytest.fixture
def read_only_index(tmp_path: Path) -> Iterator[tuple[Workspace, str, Snapshot]]:
    """A built index in a directory that cannot be written: a tmpfs remounted read-only
    (root), else a directory without write permission."""
    mnt = tmp_path / "ro"
    mnt.mkdir()
    mounted = _mount(mnt, "size=16m") is None
    if not mounted and os.geteuid() == 0:
        pytest.skip("root can write to any directory and no tmpfs could be mounted")
    ws = Workspace(tmp_path, mnt / "idx")
    snap = snapshot_file(ws.build())
    if mounted:
        subprocess.run(["mount", "-o", "remount,ro", str(mnt)], check=True)
        how = "read-only mount"
    else:
        ws.index.root.chmod(stat.S_IRUSR | stat.S_IXUSR)
        how = "directory without write permission"
    try:
        yield ws, how, snap
    finally:
        if mounted:
            subprocess.run(["umount", "-l", str(mnt)], check=False)
        else:
            ws.index.root.chmod(stat.S_IRWXU)


def test_a_read_only_index_directory_is_searched(
    read_only_index: tuple[Workspace, str, Snapshot], capsys: pytest.CaptureFixture[str]
) -> None:
    ws, how, snap = read_only_index
    rng = random.Random(SEED)
    manager = ws.manager()
    try:
        ws.serves(manager, rng, snap)
        status = manager.status()
        assert status.files == FILES, how
        assert status.custom["access"] in ("read-only", "immutable"), how
        assert any("cannot be written" in note for note in status.custom["index_notes"])
        with pytest.raises(IndexReadOnlyError, match="read-only"):
            manager.sync()
        COUNTS["read-only opens"] += 1
    finally:
        manager.close()
    _write_config(ws.workspace, ws.index.root)
    # keyword-only CLI (provider none): searching needs no write either
    word = CODEWORD.search((ws.workspace / "MEMORY.md").read_text(encoding="utf-8"))
    assert word is not None
    code, out, err = _cli(
        capsys, "-w", str(ws.workspace), "search", "--no-sync", "--json", word.group(1)
    )
    assert code == 0, (how, out, err)
    assert '"path": "MEMORY.md"' in out, out
    code, out, err = _cli(capsys, "-w", str(ws.workspace), "status")
    assert code == 0 and "cannot be written" in out, out
    COUNTS["read-only opens"] += 2
