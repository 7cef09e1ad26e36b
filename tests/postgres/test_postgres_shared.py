"""Two checkouts of one memory on one namespace: each reads what the other wrote, an older
local copy never replaces a newer version, and a search without sync answers as it stands."""

from __future__ import annotations

import logging
import os
import shutil
from pathlib import Path

import pytest
from memwell.testing.conformance import write_workspace
from memwell_postgres.config import PostgresConfig
from pg_helpers import Build

FILES = {
    "MEMORY.md": "# Memory\n\nThe gateway runs on port 8443.\n",
    "memory/notes.md": "# Notes\n\nBackups run nightly at two.\n",
}


def _paths(manager: object, query: str) -> list[str]:
    return [r.path for r in manager.search(query, max_results=10, min_score=0.0)]  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    "hosts",
    [(None, None), ("host-a", "host-b"), ("same", "same")],
    ids=["default-ids", "distinct-ids", "one-id-for-both"],
)
def test_an_older_checkout_never_hides_what_another_indexed(
    hosts: tuple[str | None, str | None], build: Build, tmp_path: Path
) -> None:
    a = write_workspace(tmp_path / "a", FILES)
    b = tmp_path / "b"
    shutil.copytree(a, b, copy_function=shutil.copy2)  # a second checkout, not yet pulled
    namespace = f"two-checkouts-{hosts[0]}-{hosts[1]}"

    def pg(host: str | None) -> dict[str, str]:
        return {"namespace": namespace, **({"host_id": host} if host else {})}

    first_a = build(a, provider="none", pg=pg(hosts[0]))
    first_b = build(b, provider="none", pg=pg(hosts[1]))
    first_a.sync()
    first_b.sync()
    with (a / "MEMORY.md").open("a", encoding="utf-8") as out:
        out.write("The quokka token is 7f3a.\n")
    first_a.sync()
    old = b / "MEMORY.md"
    os.utime(old, ns=(old.stat().st_mtime_ns - 10**9, old.stat().st_mtime_ns - 10**9))

    # a fresh manager on b, searching without a sync, reads what a indexed
    reader = build(b, provider="none", pg=pg(hosts[1]))
    assert _paths(reader, "quokka") == ["MEMORY.md"]
    assert reader.last_sync is None, "sync.on_search = false: a search must not sync"

    # b syncing its older copy keeps a's newer version and says it skipped it
    first_b.sync()
    assert _paths(reader, "quokka") == ["MEMORY.md"]
    assert first_b.status().custom["last_sync"]["skipped_older_copies"] == 1
    # once b's copy is edited after a's, b's version wins
    old.write_text("# Memory\n\nThe gateway moved to port 9443.\n", encoding="utf-8")
    first_b.sync()
    assert _paths(first_a, "9443") == ["MEMORY.md"]
    assert _paths(first_a, "quokka") == []


def test_default_host_ids_tell_checkouts_apart(tmp_path: Path) -> None:
    config = PostgresConfig(dsn="x")
    one, two = config.host(tmp_path / "one"), config.host(tmp_path / "two")
    assert one != two and one.split(":")[0] == two.split(":")[0]
    assert config.host(tmp_path / "one") == one
    assert PostgresConfig(dsn="x", host_id="h").host(tmp_path / "one") == "h"


def test_search_without_sync_on_an_empty_namespace_says_so(
    build: Build, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    ws = write_workspace(tmp_path / "ws", FILES)
    memory = build(ws, provider="none", pg={"namespace": "never-indexed"})
    with caplog.at_level(logging.WARNING, logger="memwell_postgres"):
        assert memory.search("gateway", min_score=0.0) == []
    assert "'never-indexed'" in caplog.text and "has no index yet" in caplog.text
    assert memory.status().files == 0
    synced = build(ws, provider="none", pg={"namespace": "never-indexed"}, sync={"watch": False})
    assert _paths(synced, "gateway") == ["MEMORY.md"], "sync.on_search = true syncs first"
