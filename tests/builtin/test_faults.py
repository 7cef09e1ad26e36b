"""Errors on index files are classified by SQLite result code, errno or type, never by a
word a provider's message happens to contain."""

from __future__ import annotations

import errno
from pathlib import Path

import pytest
from memwell.contract.errors import ProviderError
from memwell_sqlite.driver import connect
from memwell_sqlite.faults import Fault, IndexDamagedError, IndexDiskFullError, classify
from memwell_sqlite.integrity import index_problem


def _error_from(db: Path) -> Exception:
    conn = None
    try:
        conn, _ = connect(db, load_vec=False)
        conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
    except Exception as exc:
        return exc
    finally:
        if conn is not None:
            conn.close()
    raise AssertionError("no error")


def test_real_sqlite_errors_and_os_errors(tmp_path: Path) -> None:
    garbage = tmp_path / "garbage.sqlite"
    garbage.write_bytes(b"not a database at all" * 300)
    assert classify(_error_from(garbage)) is Fault.CORRUPT
    assert classify(OSError(errno.ENOSPC, "No space left on device")) is Fault.FULL
    assert classify(OSError(errno.EROFS, "Read-only file system")) is Fault.TRANSIENT
    assert classify(IndexDamagedError("index metadata is unreadable")) is Fault.CORRUPT
    assert classify(IndexDiskFullError("out of disk space")) is Fault.FULL


@pytest.mark.parametrize("word", ["corrupt", "malformed", "not a database", "disk is full"])
def test_a_provider_error_is_never_taken_for_index_damage(word: str) -> None:
    assert classify(ProviderError(f"embedding server said: {word}", provider="p")) is Fault.OTHER


def test_a_short_main_file_is_judged_by_sqlite_when_a_wal_exists(tmp_path: Path) -> None:
    """Without a WAL the header check stands; with one, SQLite's quick_check decides."""
    db = tmp_path / "index-1.sqlite"
    conn, _ = connect(db, load_vec=False)
    conn.execute("CREATE TABLE t (x BLOB)")
    with conn:
        conn.executemany("INSERT INTO t VALUES (?)", [(b"x" * 3000,)] * 50)
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    healthy = db.read_bytes()
    short = healthy[: len(healthy) // 2]
    db.write_bytes(short)
    assert index_problem(db) is not None and "truncated" in str(index_problem(db))
    Path(f"{db}-wal").write_bytes(b"\0" * 32)  # a WAL that holds nothing: still damaged
    assert index_problem(db) is not None
