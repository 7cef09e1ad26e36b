"""Many writers and readers on one namespace, in separate processes, and a server restart."""

from __future__ import annotations

import multiprocessing
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

import psycopg
import pytest
from memwell.contract.errors import BackendUnavailableError
from memwell.retrieval.chunking import chunk_markdown
from memwell.testing.conformance import write_workspace
from memwell_postgres.config import PostgresConfig
from memwell_postgres.schema import ensure_generation_indexes
from memwell_postgres.store import Store
from pg_helpers import Build
from pg_workers import rebuilder, writer

SPAWN = multiprocessing.get_context("spawn")


def _join(procs: list[Any], timeout: float = 120) -> None:
    for proc in procs:
        proc.join(timeout)
    for proc in procs:
        assert proc.exitcode == 0, f"{proc.name} exited with {proc.exitcode}"


def test_two_writer_processes_lose_and_duplicate_nothing(
    pg_server: Any, build: Build, tmp_path: Path
) -> None:
    ws = write_workspace(tmp_path / "ws")
    namespace = "two-writers"
    build(ws, pg={"namespace": namespace, "host_id": "seed"}).sync()
    procs = [
        SPAWN.Process(target=writer, args=(pg_server.dsn, str(ws), namespace, host, 4), name=host)
        for host in ("host-a", "host-b")
    ]
    for proc in procs:
        proc.start()
    _join(procs)
    on_disk = {
        str(p.relative_to(ws)): p.read_text(encoding="utf-8")
        for p in [ws / "MEMORY.md", *sorted((ws / "memory").glob("*.md"))]
    }
    with psycopg.connect(pg_server.dsn) as conn:
        generation = conn.execute(
            "SELECT generation FROM memwell.namespaces WHERE namespace = %s", (namespace,)
        ).fetchone()[0]
        rows = conn.execute(
            "SELECT path, start_line, end_line, hash FROM memwell.chunks "
            "WHERE namespace = %s AND generation = %s",
            (namespace, generation),
        ).fetchall()
        files = {
            r[0]
            for r in conn.execute(
                "SELECT path FROM memwell.files WHERE namespace = %s AND generation = %s",
                (namespace, generation),
            ).fetchall()
        }
        counted = conn.execute(
            "SELECT chunk_count FROM memwell.generations WHERE namespace = %s AND generation = %s",
            (namespace, generation),
        ).fetchone()[0]
    assert files == set(on_disk), "every file on disk indexed, nothing else"
    duplicates = [key for key, n in Counter(rows).items() if n > 1]
    assert not duplicates
    for path, text in on_disk.items():
        expected = {(c.start_line, c.end_line, c.hash) for c in chunk_markdown(text)}
        stored = {(s, e, h) for p, s, e, h in rows if p == path}
        assert stored == expected, f"{path}: chunks do not match the file on disk"
    assert counted == len(rows), "the generation's chunk count (BM25 statistics) drifted"
    assert len(files) == 3 + 1 + 2 * 4 * 3


def test_readers_during_full_reindex_never_see_empty_or_mixed(
    pg_server: Any, build: Build, tmp_path: Path
) -> None:
    files = {
        f"memory/n{i:02}.md": f"# Note {i}\n\nThe needle fact number {i}.\n" for i in range(30)
    }
    ws = write_workspace(tmp_path / "ws", files)
    namespace = "reindex-readers"
    reader = build(ws, provider="none", pg={"namespace": namespace})
    reader.sync()
    first = reader.status().custom["generation"]
    proc = SPAWN.Process(target=rebuilder, args=(pg_server.dsn, str(ws), namespace, 5))
    proc.start()
    searches = 0
    while proc.is_alive() or searches == 0:
        results = reader.search("needle fact", max_results=50, min_score=0.0)
        paths = [r.path for r in results]
        assert len(paths) == 30, f"a reader saw {len(paths)} of 30 chunks"
        assert len(set(paths)) == 30, "a reader saw chunks of two generations at once"
        searches += 1
    _join([proc])
    assert reader.status().custom["generation"] == first + 5
    assert searches >= 5


def test_server_restart_gives_a_clear_error_then_recovers(
    pg_server: Any, build: Build, tmp_path: Path
) -> None:
    ws = write_workspace(tmp_path / "ws")
    memory = build(ws, provider="none", pg={"connect_timeout": 1})
    memory.sync()
    assert memory.search("Zanzibar")
    pg_server.stop()
    try:
        with pytest.raises(
            BackendUnavailableError, match=r"postgres server 127\.0\.0\.1:\d+/postgres"
        ):
            memory.search("Zanzibar")
        with pytest.raises(BackendUnavailableError):
            memory.sync()
    finally:
        pg_server.start()
    deadline = time.monotonic() + 30
    while True:
        try:
            results = memory.search("Zanzibar")
            break
        except BackendUnavailableError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.5)
    assert results and results[0].path == "memory/2026-01-02.md"
    (ws / "memory" / "after.md").write_text("Written after the restart: kestrel.\n")
    memory.sync()
    assert [r.path for r in memory.search("kestrel")] == ["memory/after.md"]


def test_an_index_build_waits_for_another_namespaces_writer_without_deadlock(
    pg_server: Any, build: Build, tmp_path: Path
) -> None:
    """A full rebuild's index builds (SHARE locks on ``chunks`` and ``postings``) and another
    namespace's write transaction (ROW EXCLUSIVE on ``chunks``, then on ``postings``, the
    order every writer takes them in) must queue, not deadlock: the builder locked
    ``postings`` first and then waited for ``chunks``, while the writer, holding ``chunks``,
    waited for ``postings`` (seen while a 1M-chunk load ran beside a small sync)."""
    build(write_workspace(tmp_path / "ws"), pg={"namespace": "other"}).sync()  # the schema
    store = Store("memwell", "rebuilding")
    config = PostgresConfig(dsn=pg_server.dsn)
    with psycopg.connect(pg_server.dsn, autocommit=True) as setup:
        generation = store.begin_generation(setup, {"test": 1}, "host")
    errors: list[BaseException] = []
    with (
        psycopg.connect(pg_server.dsn) as writer_conn,
        psycopg.connect(pg_server.dsn, autocommit=True) as builder_conn,
    ):
        writer_conn.execute("SET lock_timeout = '20s'")
        writer_conn.execute("LOCK TABLE memwell.chunks IN ROW EXCLUSIVE MODE")

        def rebuild() -> None:
            try:
                ensure_generation_indexes(
                    builder_conn, "memwell", store.namespace, generation, ("m", 4), config
                )
            except BaseException as exc:  # reported by the assertion below
                errors.append(exc)

        builder = threading.Thread(target=rebuild)
        builder.start()
        pid = builder_conn.info.backend_pid
        with psycopg.connect(pg_server.dsn, autocommit=True) as watch:
            deadline = time.monotonic() + 20
            while not watch.execute(
                "SELECT count(*) FROM pg_locks WHERE pid = %s AND NOT granted", (pid,)
            ).fetchone()[0]:
                assert time.monotonic() < deadline, "the index build never waited for the writer"
                time.sleep(0.05)
        writer_conn.execute("LOCK TABLE memwell.postings IN ROW EXCLUSIVE MODE")
        writer_conn.commit()
        builder.join(60)
    assert not builder.is_alive()
    assert not errors, errors
