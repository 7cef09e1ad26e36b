"""Incremental sync, full-reindex triggers, the embedding cache and safe reindexing."""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import memwell_sqlite.manager
import memwell_sqlite.plugin
import pytest
from memwell.contract.config import MemwellSettings
from memwell.contract.errors import ProviderError
from memwell.contract.manager import MemorySearchManager
from memwell.registry.plugins import PluginRegistry
from memwell.runtime.factory import close_all, open_memory
from memwell.testing import HashEmbeddingProvider, hash_provider_plugin

OpenFn = Callable[..., MemorySearchManager]


def paths_for(memory: MemorySearchManager, query: str) -> set[str]:
    return {r.path for r in memory.search(query, max_results=10, min_score=0.0)}


def test_incremental_add_edit_delete_rename(
    open_ws: OpenFn, workspace: Path, provider: HashEmbeddingProvider
) -> None:
    memory = open_ws(workspace)
    memory.sync()
    embedded = provider.embedded
    assert memory.status().files == 3

    (workspace / "memory" / "added.md").write_text("Flamingos are pink because of shrimp.\n")
    memory.sync()
    assert provider.embedded == embedded + 1, "only the new file's chunk is embedded"
    assert "memory/added.md" in paths_for(memory, "flamingos shrimp")

    (workspace / "memory" / "added.md").write_text("Flamingos stand on one leg.\n")
    memory.sync()
    hits = memory.search("flamingos", min_score=0.0)
    assert any("one leg" in h.snippet for h in hits)
    assert not any("shrimp" in h.snippet for h in hits)

    os.rename(workspace / "memory" / "added.md", workspace / "memory" / "renamed.md")
    memory.sync()
    assert paths_for(memory, "flamingos leg") & {"memory/renamed.md"}
    assert "memory/added.md" not in paths_for(memory, "flamingos leg")

    (workspace / "memory" / "renamed.md").unlink()
    memory.sync()
    assert not paths_for(memory, "flamingos") & {"memory/renamed.md", "memory/added.md"}
    assert memory.status().files == 3


def test_unchanged_files_are_not_rewritten(
    open_ws: OpenFn, workspace: Path, provider: HashEmbeddingProvider
) -> None:
    memory = open_ws(workspace)
    memory.sync()
    calls = provider.calls
    # touch without changing content: mtime differs, hash equal -> no re-embed
    path = workspace / "MEMORY.md"
    os.utime(path, ns=(path.stat().st_atime_ns, path.stat().st_mtime_ns + 10**9))
    memory.sync()
    memory.sync()
    assert provider.calls == calls


@pytest.mark.parametrize(
    "change",
    [
        {"chunking": {"tokens": 200, "overlap": 40}},
        {"store": {"fts": {"tokenizer": "trigram"}}},
        {"extra_paths": ["notes"]},
    ],
)
def test_config_change_triggers_full_reindex(
    open_ws: OpenFn, workspace: Path, change: dict[str, object]
) -> None:
    (workspace / "notes").mkdir()
    (workspace / "notes" / "extra.md").write_text("Extra notes about walruses.\n")
    first = open_ws(workspace)
    first.sync()
    before = first.status().custom["generation_file"]
    first.close()
    second = open_ws(workspace, **change)
    second.sync()
    status = second.status()
    assert status.custom["generation_file"] != before, "a new index generation was built"
    if "extra_paths" in change:
        assert "notes/extra.md" in paths_for(second, "walruses")
    if change.get("provider") == "none":
        assert status.search_mode == "fts-only"
        assert status.provider == "none"


def test_new_chunker_version_triggers_full_reindex(
    open_ws: OpenFn, workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = open_ws(workspace)
    first.sync()
    before = first.status().custom["generation_file"]
    first.close()
    monkeypatch.setattr(memwell_sqlite.manager, "CHUNKER_VERSION", 10**6)
    second = open_ws(workspace)
    second.sync()
    assert second.status().custom["generation_file"] != before


def test_model_change_reindexes_with_new_dims(workspace: Path) -> None:
    registry = PluginRegistry(load_entry_points=False)
    registry.register(memwell_sqlite.plugin, "builtin")
    registry.register(hash_provider_plugin(), "hash")  # a fresh provider per model
    base = {"provider": "hash", "sync": {"watch": False, "on_search": False}}
    first = open_memory(workspace, settings=MemwellSettings.model_validate(base), registry=registry)
    first.sync()
    assert first.status().vector.dims == 64  # type: ignore[union-attr]
    second = open_memory(
        workspace,
        settings=MemwellSettings.model_validate({**base, "model": "hash-32"}),
        registry=registry,
    )
    second.sync()
    status = second.status()
    assert status.model == "hash-32" and status.vector.dims == 32  # type: ignore[union-attr]
    assert status.vectors == status.chunks
    assert second.search("Zanzibar", min_score=0.0)[0].path == "memory/2026-01-02.md"
    close_all()


def test_same_config_does_not_reindex(open_ws: OpenFn, workspace: Path) -> None:
    first = open_ws(workspace)
    first.sync()
    before = first.status().custom["generation_file"]
    first.close()
    second = open_ws(workspace)
    second.sync()
    assert second.status().custom["generation_file"] == before


def test_forced_reindex_with_warm_cache_makes_no_provider_calls(
    open_ws: OpenFn, workspace: Path, provider: HashEmbeddingProvider
) -> None:
    memory = open_ws(workspace)
    memory.sync()
    assert provider.embedded > 0
    calls = provider.calls
    memory.sync(force=True)
    assert provider.calls == calls
    assert memory.status().chunks > 0
    assert memory.status().cache.entries >= memory.status().chunks  # type: ignore[union-attr]


def test_exception_mid_reindex_leaves_old_index_serving(
    open_ws: OpenFn, workspace: Path, provider: HashEmbeddingProvider
) -> None:
    memory = open_ws(workspace)
    memory.sync()
    before = memory.search("Zanzibar", min_score=0.0)
    assert before
    generation = memory.status().custom["generation_file"]

    for i in range(30):
        (workspace / "memory" / f"bulk-{i}.md").write_text(f"Bulk note {i} about otters.\n")
    seen: list[int] = []

    def explode(texts: Sequence[str]) -> None:
        seen.append(len(texts))
        raise ProviderError("boom: injected failure", retryable=False)

    provider.fail = explode
    with pytest.raises(ProviderError):
        memory.sync(force=True)
    assert seen, "the failure was injected during the reindex"
    provider.fail = None
    status = memory.status()
    assert status.custom["generation_file"] == generation
    assert [r.path for r in memory.search("Zanzibar", min_score=0.0)] == [r.path for r in before]
    leftovers = list((workspace / ".memwell").glob("index-*.sqlite"))
    assert len(leftovers) == 1, "the half-built index was removed"


def test_cache_prune_bounds_entries(open_ws: OpenFn, workspace: Path) -> None:
    memory = open_ws(workspace, cache={"max_entries": 2})
    memory.sync(force=True)
    assert memory.status().cache.entries <= 2  # type: ignore[union-attr]


def test_vanished_workspace_files_leave_index_consistent(open_ws: OpenFn, workspace: Path) -> None:
    memory = open_ws(workspace)
    memory.sync()
    for path in (workspace / "memory").iterdir():
        path.unlink()
    (workspace / "MEMORY.md").unlink()
    memory.sync()
    status = memory.status()
    assert status.files == 0 and status.chunks == 0
    assert memory.search("Zanzibar", min_score=0.0) == []


def test_first_search_bootstraps_empty_index(open_ws: OpenFn, workspace: Path) -> None:
    memory = open_ws(workspace)
    hits = memory.search("Zanzibar codename", min_score=0.0)
    assert hits and hits[0].path == "memory/2026-01-02.md"


def test_a_warm_search_looks_at_the_generation_pointer_once_without_reading_it(
    open_ws: OpenFn, workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from memwell_sqlite.layout import POINTER, IndexDir

    # The recall cache reads the pointer too (the index's content version); off here.
    memory = open_ws(workspace, provider="none", cache={"recall": {"enabled": False}})
    memory.search("Zanzibar", min_score=0.0)  # bootstraps, opens the reader
    looks: list[int] = []
    reads: list[str] = []
    original_current, original_read = IndexDir.current, Path.read_text

    def counting(self: IndexDir, **kwargs: bool) -> Path | None:
        looks.append(1)
        return original_current(self, **kwargs)

    def reading(self: Path, *args: Any, **kwargs: Any) -> str:
        if self.name == POINTER:
            reads.append(str(self))
        return original_read(self, *args, **kwargs)

    monkeypatch.setattr(IndexDir, "current", counting)
    monkeypatch.setattr(Path, "read_text", reading)
    assert memory.search("Zanzibar codename", min_score=0.0)[0].path == "memory/2026-01-02.md"
    assert len(looks) == 1, "the bootstrap check trusts the open, non-empty reader"
    assert reads == [], "an unchanged pointer is known by its stat"
    before = memory.status().db_path
    memory.sync(force=True)  # publishes a new generation: the pointer file is replaced
    assert memory.search("Zanzibar codename", min_score=0.0)[0].path == "memory/2026-01-02.md"
    assert memory.status().db_path not in (None, before)


def test_status_fields(open_ws: OpenFn, workspace: Path) -> None:
    memory = open_ws(workspace)
    memory.sync()
    status = memory.status()
    assert status.backend == "builtin"
    assert status.provider == "hash" and status.requested_provider == "hash"
    assert status.search_mode == "hybrid"
    assert status.vectors == status.chunks and status.integrity_ok
    assert status.vector is not None and status.vector.dims == 64
    assert status.fts is not None and status.fts.available
    assert [c.source for c in status.source_counts] == ["memory"]
    assert status.db_path and Path(status.db_path).is_file()
    assert memory.probe_embedding().ok
    assert memory.probe_vector().ok


def test_keyword_only_status_and_probes(open_ws: OpenFn, workspace: Path) -> None:
    memory = open_ws(workspace, provider="none")
    memory.sync()
    status = memory.status()
    assert status.search_mode == "fts-only" and status.provider == "none"
    assert status.vectors is None
    assert not memory.probe_embedding().ok
    assert memory.search("Zanzibar")[0].path == "memory/2026-01-02.md"
