"""Errors are classified by type, status code and SQLite result code, never by the words in a
message: a backend bug that mentions "provider" is not a provider failure, a provider's HTTP
429/5xx is, SQLite's corruption codes quarantine and its busy/locked codes do not."""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from pathlib import Path

import memwell_sqlite.indexer
import pytest
from memwell.contract.errors import ProviderError, provider_failure
from memwell.providers.fallback_record import FALLBACK_FILE
from memwell.testing import HashEmbeddingProvider
from memwell.util import sqlite_errors
from memwell_sqlite.driver import connect
from memwell_sqlite.faults import Fault, classify
from reliability_helpers import (
    COUNTS,
    build_manager,
    make_registry,
    make_settings,
    no_sleep_retry,
    provider_plugin,
    write_files,
)

FILES = {
    "MEMORY.md": "# Memory\n\nThe meadow is mown on Fridays.\n",
    "memory/notes.md": "# Notes\n\nThe orchard needs pruning in March.\n",
}


def _registry(primary: HashEmbeddingProvider) -> object:
    backup = HashEmbeddingProvider(model="backup-32", dims=32)
    return make_registry(
        (provider_plugin(primary, "flaky", "remote"), "flaky"),
        (provider_plugin(backup, "backup"), "backup"),
    )


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    write_files(tmp_path / "ws", FILES)
    return tmp_path / "ws"


def test_a_backend_bug_that_mentions_the_provider_is_not_a_provider_failure(
    workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Today's main matched 'provider|embedding|batch' in any message and switched providers
    (re-embedding everything with the fallback and recording it with the index)."""

    def buggy_chunk(self: object, text: str) -> list[object]:
        raise RuntimeError("embedding provider batch bookkeeping lost a chunk id")

    monkeypatch.setattr(memwell_sqlite.indexer.Indexer, "_chunk", buggy_chunk)
    settings = make_settings(provider="flaky", fallback="backup")
    manager = build_manager(workspace, settings, _registry(HashEmbeddingProvider()))
    try:
        with pytest.raises(RuntimeError, match="bookkeeping"):
            manager.sync()
        status = manager.status()
        assert status.provider == "flaky" and status.provider_fallback is None
        assert not (workspace / ".memwell" / FALLBACK_FILE).exists()
    finally:
        manager.close()
    COUNTS["faults injected"] += 1


class SdkStatusError(Exception):
    """An SDK's HTTP error as a third-party provider might leak it: a ``status_code``."""

    def __init__(self, status_code: int) -> None:
        super().__init__("request failed")
        self.status_code = status_code


@pytest.mark.parametrize(
    "fault",
    [
        ProviderError("rate limited", provider="flaky", status_code=429),
        ProviderError("overloaded", provider="flaky", retryable=True, status_code=503),
        SdkStatusError(500),
    ],
    ids=["provider-429", "provider-503", "sdk-500"],
)
def test_a_provider_http_failure_switches_to_the_fallback(
    workspace: Path, fault: Exception
) -> None:
    primary = HashEmbeddingProvider()

    def fail(texts: Sequence[str]) -> None:
        raise fault

    primary.fail = fail
    settings = make_settings(provider="flaky", fallback="backup")
    manager = build_manager(workspace, settings, _registry(primary), retry=no_sleep_retry())
    try:
        manager.sync()
        status = manager.status()
        assert status.provider == "backup" and status.provider_fallback is not None
        assert status.provider_fallback.from_ == "flaky"
        assert manager.search("meadow", min_score=0.0)
    finally:
        manager.close()
    COUNTS["faults injected"] += 1


def test_a_leaked_sdk_status_is_kept_on_the_provider_error() -> None:
    try:
        try:
            raise SdkStatusError(503)
        except SdkStatusError as exc:
            raise ProviderError("wrapped", provider="x", status_code=503) from exc
    except ProviderError as exc:
        wrapped = exc
    outer = RuntimeError("search failed")
    outer.__cause__ = wrapped
    assert provider_failure(outer) is wrapped
    assert provider_failure(RuntimeError("provider 429 quota")) is None


# ---------------------------------------------------------------- SQLite result codes


def _locked_error(db: Path) -> sqlite3.Error:
    """A real 'database is locked' from a second connection while the first writes."""
    writer, _ = connect(db, load_vec=False)
    writer.execute("CREATE TABLE IF NOT EXISTS t (x)")
    writer.commit()
    writer.execute("BEGIN IMMEDIATE")
    writer.execute("INSERT INTO t VALUES (1)")
    other, _ = connect(db, load_vec=False)
    other.execute("PRAGMA busy_timeout = 0")
    try:
        other.execute("BEGIN IMMEDIATE")
    except Exception as exc:
        return exc  # type: ignore[return-value]
    finally:
        other.close()
        writer.rollback()
        writer.close()
    raise AssertionError("no lock error")


def _sql_error(sql: str) -> Exception:
    conn, _ = connect(Path(":memory:"), load_vec=False)
    try:
        conn.execute(sql).fetchall()
    except Exception as exc:
        return exc
    finally:
        conn.close()
    raise AssertionError("no error")


def test_corruption_codes_quarantine_and_busy_codes_do_not(tmp_path: Path) -> None:
    garbage = tmp_path / "garbage.sqlite"
    garbage.write_bytes(b"definitely not sqlite " * 400)
    try:
        conn, _ = connect(garbage, load_vec=False)
        conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
    except Exception as exc:
        notadb = exc
    assert sqlite_errors.result_code(notadb) == sqlite_errors.SQLITE_NOTADB
    assert classify(notadb) is Fault.CORRUPT

    locked = _locked_error(tmp_path / "busy.sqlite")
    assert sqlite_errors.is_contention(locked)
    assert classify(locked) is Fault.TRANSIENT


@pytest.mark.parametrize(
    "exc",
    [
        # SQLite's generic SQLITE_ERROR whose message happens to say "malformed":
        # today's main quarantined a healthy index for it
        _sql_error("SELECT json('{not json')"),
        RuntimeError("database disk image is malformed"),  # a bug quoting SQLite, no code
        ValueError("index file is corrupt"),
        ProviderError("provider says: file is not a database", provider="p"),
    ],
    ids=["sqlite-malformed-json", "runtime-error", "value-error", "provider-error"],
)
def test_words_in_a_message_never_quarantine(exc: Exception) -> None:
    assert classify(exc) is Fault.OTHER


def test_sqlite_vec_damage_is_corruption_though_its_code_is_generic() -> None:
    exc = sqlite3.OperationalError("vec0: opening blob failed")
    exc.sqlite_errorcode = sqlite_errors.SQLITE_ERROR  # type: ignore[attr-defined]
    assert classify(exc) is Fault.CORRUPT
