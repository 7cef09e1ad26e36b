"""Indexing, incremental sync, hybrid ranking, keyword-only mode, status and probes."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from lancedb_helpers import Build, write
from memwell.contract.errors import PathNotAllowedError
from memwell.contract.models import SyncProgress
from memwell.registry.plugins import PluginRegistry
from memwell.testing import HashEmbeddingProvider
from memwell_lancedb.searching import bm25_to_score, keyword_terms

NOTES = {
    "MEMORY.md": "# Memory\n\nThe staging database listens on port 5433.\n",
    "memory/deploy.md": "# Deploy\n\nDeploys run from the release branch every Friday.\n",
    "memory/garden.md": "# Garden\n\nTomatoes need watering every morning.\n",
}


def test_full_index_counts_status_and_progress(build: Build, workspace: Path) -> None:
    write(workspace, NOTES)
    memory = build(workspace)
    seen: list[SyncProgress] = []
    memory.sync(progress=seen.append)
    status = memory.status()
    assert (status.backend, status.provider, status.model) == ("lancedb", "hash", "hash-64")
    assert status.search_mode == "hybrid"
    assert (status.files, status.chunks, status.vectors) == (3, 3, 3)
    assert status.integrity_ok and not status.dirty
    assert status.vector is not None and status.vector.dims == 64
    assert status.db_path == str(workspace / ".memwell" / "lancedb")
    assert status.custom["last_sync"]["full"] is True
    assert seen and seen[-1].completed == seen[-1].total == 3


def test_incremental_sync_embeds_only_what_changed(
    build: Build, workspace: Path, provider: HashEmbeddingProvider
) -> None:
    write(workspace, NOTES)
    memory = build(workspace)
    memory.sync()
    assert provider.embedded == 3

    memory.sync()  # nothing changed: no reads, no embeddings
    stats = memory.index.last_stats
    assert stats is not None and (stats.full, stats.indexed, stats.embedded) == (False, 0, 0)

    deploy = workspace / "memory" / "deploy.md"
    os.utime(deploy, ns=(1, 1))  # touched, same content: the file row is refreshed only
    memory.sync()
    stats = memory.index.last_stats
    assert stats is not None and (stats.restatted, stats.indexed, stats.embedded) == (1, 0, 0)

    deploy.write_text("# Deploy\n\nDeploys now run on Tuesdays.\n", encoding="utf-8")
    (workspace / "memory" / "garden.md").rename(workspace / "memory" / "plants.md")
    memory.sync()
    stats = memory.index.last_stats
    assert stats is not None
    assert (stats.indexed, stats.removed) == (2, 1)
    assert (stats.embedded, stats.reused) == (1, 1)  # the renamed file's vector is reused
    assert provider.embedded == 4
    paths = {r.path for r in memory.search("tomatoes watering", min_score=0.0)}
    assert "memory/plants.md" in paths and "memory/garden.md" not in paths
    assert memory.status().files == 3


def test_vanished_files_are_removed(build: Build, workspace: Path) -> None:
    write(workspace, NOTES)
    memory = build(workspace)
    memory.sync()
    (workspace / "memory" / "garden.md").unlink()
    memory.sync()
    assert memory.status().files == 2
    assert all(r.path != "memory/garden.md" for r in memory.search("tomatoes", min_score=0.0))


@pytest.mark.parametrize(
    "change",
    [
        {"model": "hash-32"},
        {"chunking": {"tokens": 100, "overlap": 10}},
    ],
)
def test_provider_or_chunking_change_reembeds_everything(
    build: Build, workspace: Path, model_registry: PluginRegistry, change: dict[str, object]
) -> None:
    write(workspace, NOTES)
    build(workspace, registry=model_registry).sync()
    changed = build(workspace, registry=model_registry, **change)
    assert changed.index.rebuild_reason(changed.index.meta()) is not None
    changed.sync()
    stats = changed.index.last_stats
    assert stats is not None and stats.full and stats.embedded == 3
    assert changed.search("Tomatoes watering", min_score=0.0)[0].path == "memory/garden.md"
    if "model" in change:
        assert changed.status().vector.dims == 32  # type: ignore[union-attr]


def test_stale_vectors_are_never_compared(
    build: Build, workspace: Path, model_registry: PluginRegistry
) -> None:
    write(workspace, NOTES)
    build(workspace, registry=model_registry).sync()
    other = build(workspace, registry=model_registry, model="hash-32", sync={"on_search": False})
    assert not other.index.vectors_usable(other.index.meta())
    status = other.status()
    assert status.search_mode == "fts-only" and "reindex" in str(status.provider_unavailable_reason)
    assert other.search("tomatoes", min_score=0.0)[0].path == "memory/garden.md"


def test_search_syncs_changed_files_first(build: Build, workspace: Path) -> None:
    write(workspace, NOTES)
    memory = build(workspace)
    assert memory.search("Tomatoes", min_score=0.0)  # bootstrap: the first search indexes
    write(workspace, {"memory/birds.md": "Pelicans nest by the lake.\n"})
    assert memory.status().dirty
    assert memory.search("pelicans lake", min_score=0.0)[0].path == "memory/birds.md"


def test_hybrid_ranking_fuses_keyword_and_vector(build: Build, workspace: Path) -> None:
    write(
        workspace,
        {
            "memory/a.md": "The invoice service retries failed payments three times.\n",
            "memory/b.md": "Invoices are archived monthly.\n",
            "memory/c.md": "Our cat likes the sunny windowsill.\n",
        },
    )
    memory = build(workspace)
    memory.sync()
    results = memory.search("invoice payments retries", min_score=0.0)
    assert results[0].path == "memory/a.md"
    assert [r.score for r in results] == sorted((r.score for r in results), reverse=True)
    assert results[0].citation == "memory/a.md#L1-L2"
    # A planted keyword that the hash vectors barely see still surfaces via BM25.
    keyword = memory.search("windowsill", min_score=0.0)
    assert keyword[0].path == "memory/c.md"


def test_rrf_fusion_mmr_and_decay_run(build: Build, workspace: Path) -> None:
    write(workspace, NOTES)
    memory = build(
        workspace,
        query={
            "hybrid": {
                "fusion": "rrf",
                "mmr": {"enabled": True},
                "temporal_decay": {"enabled": True},
            }
        },
    )
    memory.sync()
    results = memory.search("release branch deploys", min_score=0.0)
    assert results[0].path == "memory/deploy.md"
    assert all(0.0 <= r.score <= 1.0 for r in results)


def test_min_score_and_relaxed_keyword_rescue(build: Build, workspace: Path) -> None:
    write(workspace, NOTES)
    memory = build(workspace)
    memory.sync()
    # The default 0.35 floor: a keyword-only hit scores at most 0.3 but is rescued.
    assert memory.search("5433")[0].path == "MEMORY.md"
    assert memory.search("5433", min_score=1.0)[0].path == "MEMORY.md"
    assert memory.search("unrelated xylophone", min_score=1.0) == []


def test_keyword_only_mode(build: Build, workspace: Path, provider: HashEmbeddingProvider) -> None:
    write(workspace, NOTES)
    memory = build(workspace, provider="none")
    memory.sync()
    status = memory.status()
    assert status.search_mode == "fts-only" and status.vectors is None
    assert provider.calls == 0
    top = memory.search("staging database port")[0]
    assert top.path == "MEMORY.md" and top.score > 0.35
    assert not memory.probe_embedding().ok and not memory.probe_vector().ok


def test_cjk_keyword_search(build: Build, workspace: Path) -> None:
    write(workspace, {"memory/zh.md": "我们决定把数据库迁移到北京机房。\n", **NOTES})
    memory = build(workspace, provider="none")
    memory.sync()
    assert memory.search("北京机房", min_score=0.0)[0].path == "memory/zh.md"


def test_sources_filter_and_sessions(build: Build, workspace: Path) -> None:
    write(workspace, NOTES)
    write(
        workspace,
        {
            "sessions/s1.jsonl": '{"type":"message","message":{"role":"user",'
            '"content":"remember the zeppelin hangar code"}}\n'
        },
    )
    memory = build(workspace, sources=["memory", "sessions"])
    memory.sync()
    hits = memory.search("zeppelin hangar", min_score=0.0)
    assert hits[0].source == "sessions" and hits[0].path == "sessions/s1.jsonl"
    only_memory = memory.search("zeppelin hangar", min_score=0.0, sources=["memory"])
    assert all(r.source == "memory" for r in only_memory)


def test_sessions_in_the_reference_layout_are_indexed(build: Build, workspace: Path) -> None:
    """Issue 40 item 13: ``sessions/<sessionKey>/transcripts/*.jsonl`` on this backend too."""
    write(workspace, NOTES)
    record = '{"type":"message","message":{"role":"user","content":"the zeppelin hangar code"}}\n'
    write(workspace, {"sessions/agent-main/transcripts/s1.jsonl": record})
    memory = build(workspace, sources=["memory", "sessions"])
    memory.sync()
    hits = memory.search("zeppelin hangar", min_score=0.0)
    assert hits[0].path == "sessions/agent-main/transcripts/s1.jsonl"
    assert hits[0].source == "sessions" and hits[0].start_line == 1
    read = memory.read_file(hits[0].path, from_line=1, lines=1)
    assert read.text == "User: the zeppelin hangar code"


def test_hybrid_disabled_reports_vector_only(build: Build, workspace: Path) -> None:
    """Issue 40 item 6: no keyword half, so the mode is ``vector-only`` (was ``hybrid``)."""
    write(workspace, NOTES)
    memory = build(workspace, query={"hybrid": {"enabled": False}})
    assert memory.status().search_mode == "vector-only", "before the model is loaded"
    memory.sync()
    memory.search("zeppelin", min_score=0.0)
    assert memory.status().search_mode == "vector-only"


def test_namespaces_share_one_database(build: Build, tmp_path: Path) -> None:
    shared = str(tmp_path / "shared-db")
    one = write(tmp_path / "one", {"MEMORY.md": "Alpha agent keeps the llama notes.\n"})
    two = write(tmp_path / "two", {"MEMORY.md": "Beta agent keeps the walrus notes.\n"})
    first = build(one, lance={"uri": shared, "index_namespace": "one"})
    second = build(two, lance={"uri": shared, "index_namespace": "two"})
    first.sync()
    second.sync()
    assert all("walrus" not in r.snippet for r in first.search("walrus", min_score=0.0))
    assert "walrus" in second.search("walrus", min_score=0.0)[0].snippet
    assert first.status().db_path == second.status().db_path == shared


def test_read_file_follows_core_rules(build: Build, workspace: Path) -> None:
    write(workspace, NOTES)
    memory = build(workspace)
    assert memory.read_file("memory/deploy.md", from_line=3, lines=1).text.startswith("Deploys")
    assert memory.read_file("memory/missing.md").text == ""
    with pytest.raises(PathNotAllowedError):
        memory.read_file("../secrets.md")


def test_probes_and_closed_manager(build: Build, workspace: Path) -> None:
    memory = build(workspace)
    assert memory.probe_embedding().ok and memory.probe_vector().ok
    memory.close()
    memory.close()
    with pytest.raises(Exception, match="closed"):
        memory.search("anything")


def test_score_helpers() -> None:
    assert bm25_to_score(0.0) == 0.0 and bm25_to_score(1.0) == 0.5
    assert 0.0 < bm25_to_score(0.5) < bm25_to_score(4.0) < 1.0
    assert keyword_terms("deploy 北京机房 NEAR(") == ["deploy", "NEAR", "北京", "京机", "机房"]
    assert keyword_terms('"*"') == []


def test_failing_provider_is_reported_not_raised_by_status(build: Build, workspace: Path) -> None:
    from types import SimpleNamespace

    import memwell_lancedb.plugin as lance_plugin
    from memwell.contract.descriptors import EmbeddingProviderSpec
    from memwell.contract.errors import ProviderUnavailableError
    from memwell.contract.hookspecs import hookimpl

    def create(ctx: object) -> HashEmbeddingProvider:
        raise ProviderUnavailableError("no API key for broken")

    @hookimpl
    def memwell_embedding_providers() -> list[EmbeddingProviderSpec]:
        return [
            EmbeddingProviderSpec(id="broken", create=create, default_model="m", transport="remote")
        ]

    registry = PluginRegistry(load_entry_points=False)
    registry.register(
        SimpleNamespace(memwell_embedding_providers=memwell_embedding_providers), "broken"
    )
    registry.register(lance_plugin, "lancedb")
    write(workspace, NOTES)
    memory = build(workspace, provider="broken", registry=registry)
    with pytest.raises(ProviderUnavailableError):
        memory.sync()
    status = memory.status()
    assert status.search_mode == "disabled"
    assert "no API key" in str(status.provider_unavailable_reason)
    assert "no API key" in str(status.last_sync_error)
    assert not memory.probe_embedding().ok and not memory.probe_vector().ok


def test_a_long_run_of_one_word_gets_unique_chunk_ids_through_edits(
    build: Build, workspace: Path
) -> None:
    """Identical chunks of one line (issue 38 item 1) each get their own id, so an edit's
    ``merge_insert`` on ``id`` keeps exactly one row per chunk."""
    write(workspace, {**NOTES, "memory/paste.md": "# Paste\n\n" + "ab " * 3000 + "\n"})
    memory = build(workspace)
    memory.sync()
    for tail in ("quokka sighting\n", "wombat sighting\n"):  # two edits of the same file
        with (workspace / "memory" / "paste.md").open("a", encoding="utf-8") as fh:
            fh.write(tail)
        memory.sync()
    table = memory.index.db.open(memory.index.chunks_name)
    rows = table.to_arrow().select(["id", "path"]).to_pylist()
    ids = [row["id"] for row in rows if row["path"] == "memory/paste.md"]
    assert len(ids) > 2 and len(set(ids)) == len(ids)
    assert memory.status().chunks == len(rows)
    hits = memory.search("wombat quokka", min_score=0.0)
    assert hits and hits[0].path == "memory/paste.md"
