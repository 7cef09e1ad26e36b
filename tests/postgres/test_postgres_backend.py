"""The postgres backend on the real server: tenancy, CJK, hosts that must not delete each
other's files, the shared embedding cache, the schema, doctor and the entry point."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import unicodedata
from pathlib import Path
from typing import Any

import memwell_postgres.plugin as pg_plugin
import psycopg
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from memwell.registry.plugins import PluginRegistry
from memwell.retrieval.cjk import is_cjk_char
from memwell.testing import HashEmbeddingProvider, hash_provider_plugin
from memwell.testing.conformance import write_workspace
from memwell_postgres import copy_binary
from memwell_postgres.config import PostgresConfig
from memwell_postgres.diagnostics import check_server
from memwell_postgres.lexemes import index_text, length_of, terms_of
from pg_helpers import Build, make_manager
from psycopg import sql


def _paths(manager: Any, query: str) -> list[str]:
    return [r.path for r in manager.search(query, max_results=10, min_score=0.0)]


def test_namespaces_are_isolated(build: Build, tmp_path: Path) -> None:
    a = write_workspace(tmp_path / "a", {"MEMORY.md": "The falcon project ships in March.\n"})
    b = write_workspace(tmp_path / "b", {"MEMORY.md": "The heron project ships in June.\n"})
    team_a = build(a, pg={"namespace": "iso-team-a"})
    team_b = build(b, pg={"namespace": "iso-team-b"})
    team_a.sync()
    team_b.sync()
    assert _paths(team_a, "falcon") == ["MEMORY.md"]
    assert not any("heron" in r.snippet for r in team_a.search("heron", min_score=0.0))
    assert not any("falcon" in r.snippet for r in team_b.search("falcon", min_score=0.0))
    assert team_a.status().chunks == team_b.status().chunks == 1
    # the same workspace under another namespace starts empty and never sees team a
    other = build(a, pg={"namespace": "iso-team-c"})
    assert other.status().files == 0


def test_default_namespace_follows_the_workspace(tmp_path: Path) -> None:
    config = PostgresConfig(dsn="postgresql://x")
    one, two = config.namespace_for(tmp_path / "one"), config.namespace_for(tmp_path / "two")
    assert one != two and one.startswith("one-")
    assert config.namespace_for(tmp_path / "one") == one
    assert PostgresConfig(dsn="x", namespace="team").namespace_for(tmp_path) == "team"


def test_hnsw_parameters_pgvector_refuses_are_refused_at_load(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match=r"hnsw_ef_construction.*2 \* hnsw_m"):
        PostgresConfig(dsn="x", hnsw_m=48)
    assert PostgresConfig(dsn="x", hnsw_m=48, hnsw_ef_construction=96).hnsw_m == 48


def test_cjk_keyword_search_both_sides(build: Build, tmp_path: Path) -> None:
    ws = write_workspace(
        tmp_path / "ws",
        {
            "memory/zh.md": "我们决定把数据库迁移到北京机房。\n",
            "memory/ja.md": "会議は東京本社で木曜日に行います。\n",
            "memory/en.md": "Nothing about Asia here.\n",
        },
    )
    memory = build(ws, provider="none")
    memory.sync()
    assert _paths(memory, "北京机房")[0] == "memory/zh.md"
    assert _paths(memory, "東京本社")[0] == "memory/ja.md"
    assert "memory/en.md" not in _paths(memory, "北京")


def test_a_file_with_nul_bytes_is_indexed(build: Build, tmp_path: Path) -> None:
    ws = write_workspace(
        tmp_path / "ws", {"memory/bin.md": "Binary\x00junk then the walrus fact.\n"}
    )
    memory = build(ws, provider="none")
    memory.sync()
    assert _paths(memory, "walrus") == ["memory/bin.md"]
    assert (ws / "memory" / "bin.md").read_bytes() == b"Binary\x00junk then the walrus fact.\n"


def test_keyword_ranking_is_bm25(build: Build, tmp_path: Path) -> None:
    """A rare term outranks a common one, and a stemmed form matches."""
    files = {f"memory/n{i}.md": f"Routine note {i} about the weekly deploy.\n" for i in range(6)}
    files["memory/rare.md"] = "The deploy of the quasar service was delayed.\n"
    ws = write_workspace(tmp_path / "ws", files)
    memory = build(ws, provider="none")
    memory.sync()
    assert _paths(memory, "quasar deploy")[0] == "memory/rare.md"
    assert _paths(memory, "delaying")[0] == "memory/rare.md"  # porter: delay


def test_schema_has_the_promised_indexes_and_tables(
    build: Build, tmp_path: Path, pg_server: Any
) -> None:
    memory = build(write_workspace(tmp_path / "ws"))
    memory.sync()

    def generation_indexes() -> list[str]:
        with psycopg.connect(pg_server.dsn) as conn:
            return [
                r[0]
                for r in conn.execute(
                    "SELECT indexdef FROM pg_indexes WHERE schemaname = 'memwell' "
                    "AND indexdef LIKE %s",
                    (f"%namespace = '{memory.namespace}'%",),
                ).fetchall()
            ]

    with psycopg.connect(pg_server.dsn) as conn:
        tables = {
            r[0]
            for r in conn.execute(
                "SELECT tablename FROM pg_tables WHERE schemaname = 'memwell'"
            ).fetchall()
        }
    assert {
        "namespaces",
        "generations",
        "files",
        "chunks",
        "embedding_cache",
        "term_stats",
        "postings",
    } <= tables
    assert "posting_blocks" not in tables  # older schemas' unread block bounds
    first = generation_indexes()
    postings = [d for d in first if "ON memwell.postings USING btree (lexeme, chunk_id)" in d]
    hnsw = [d for d in first if "USING hnsw" in d]
    assert len(postings) == 1 and "INCLUDE (tf, len)" in postings[0] and len(hnsw) == 1
    assert "vector(64)" in hnsw[0] and "hash:hash-64" in hnsw[0] and "ef_construction" in hnsw[0]
    memory.sync(force=True)  # a new generation gets its own indexes; the old ones are dropped
    second = generation_indexes()
    assert len(second) == 2 and not set(first) & set(second)


def test_an_hnsw_build_outgrowing_its_memory_is_said(build: Build, tmp_path: Path) -> None:
    """pgvector's notice that the graph no longer fits ``maintenance_work_mem`` (the rest of
    the build is far slower) reaches the sync's notes instead of the server log only."""
    ws = tmp_path / "ws"
    (ws / "memory").mkdir(parents=True)
    for f in range(40):
        paragraphs = (f"note {f} {p} about topic{p % 7} and item{f * 50 + p}" for p in range(50))
        (ws / "memory" / f"n{f}.md").write_text("\n\n".join(paragraphs) + "\n", "utf-8")
    roomy = build(ws, pg={"namespace": "hnsw-roomy", "maintenance_work_mem": "256MB"})
    roomy.sync()
    assert roomy.last_sync is not None and roomy.last_sync.notes == []
    memory = build(
        ws,
        pg={"namespace": "hnsw-tight", "maintenance_work_mem": "1MB", "hnsw_m": 32},
        chunking={"tokens": 16, "overlap": 0},
    )
    memory.sync()
    assert memory.status().chunks >= 1500
    assert memory.last_sync is not None
    assert any("maintenance_work_mem" in n for n in memory.last_sync.notes), memory.last_sync
    assert memory.search("topic3 item1003", max_results=3)[0].path == "memory/n20.md"


def test_unchanged_files_are_not_rewritten(build: Build, tmp_path: Path, pg_server: Any) -> None:
    ws = write_workspace(tmp_path / "ws")
    memory = build(ws)
    memory.sync()
    with psycopg.connect(pg_server.dsn) as conn:
        before = conn.execute(
            "SELECT id FROM memwell.chunks WHERE namespace = %s ORDER BY id", (memory.namespace,)
        ).fetchall()
    (ws / "memory" / "projects.md").write_text(
        "# Projects\n\n## Gardening\nTomatoes need watering every morning.\n", encoding="utf-8"
    )
    memory.sync()
    with psycopg.connect(pg_server.dsn) as conn:
        after = conn.execute(
            "SELECT id, path FROM memwell.chunks WHERE namespace = %s", (memory.namespace,)
        ).fetchall()
    untouched = {i for i, p in after if p != "memory/projects.md"}
    assert untouched <= {r[0] for r in before}  # other files' rows kept as they were
    assert memory.last_sync is not None and memory.last_sync.written == 1


def test_a_stale_host_never_deletes_another_hosts_files(build: Build, tmp_path: Path) -> None:
    full = write_workspace(
        tmp_path / "host-a",
        {
            "memory/alpha.md": "Alpha notes: the gateway runs on port 8443.\n",
            "memory/beta.md": "Beta notes: backups run nightly at two.\n",
        },
    )
    stale = write_workspace(
        tmp_path / "host-b",
        {
            "memory/alpha.md": "Alpha notes: the gateway runs on port 8443.\n",
        },
    )
    shared = {"namespace": "stale-team"}
    host_a = build(full, provider="none", pg={**shared, "host_id": "a"})
    host_a.sync()
    host_b = build(stale, provider="none", pg={**shared, "host_id": "b"})
    host_b.sync()
    assert _paths(host_b, "backups nightly") == ["memory/beta.md"]
    assert host_b.status().custom["last_sync"]["kept_files_of_other_hosts"] == 1
    # b's own file is deleted when b's copy goes away
    (stale / "memory" / "gamma.md").write_text("Gamma: the quokka mascot.\n", encoding="utf-8")
    host_b.sync()
    assert _paths(host_a, "quokka") == ["memory/gamma.md"]
    (stale / "memory" / "gamma.md").unlink()
    host_b.sync()
    assert _paths(host_a, "quokka") == []
    # an older copy on b does not overwrite a's newer text
    (full / "memory" / "beta.md").write_text("Beta notes: backups run hourly now.\n")
    host_a.sync()
    old = stale / "memory" / "beta.md"
    old.write_text("Beta notes: backups run nightly at two.\n")
    os.utime(old, ns=(1_000_000_000, 1_000_000_000))
    host_b.sync()
    assert _paths(host_a, "hourly") == ["memory/beta.md"]
    assert host_b.status().custom["last_sync"]["skipped_older_copies"] == 1


def test_shared_cache_second_host_embeds_nothing(pg_server: Any, tmp_path: Path) -> None:
    files = {f"memory/n{i}.md": f"Note {i}: the {i}th fact about otters.\n" for i in range(5)}
    managers = []
    counts = []
    for host in ("one", "two"):
        provider = HashEmbeddingProvider()
        registry = PluginRegistry(load_entry_points=False)
        registry.register(hash_provider_plugin(provider), "hash")
        registry.register(pg_plugin, "postgres")
        ws = write_workspace(tmp_path / host, files)  # each host its own namespace
        manager = make_manager(ws, registry, pg_server.dsn, pg={"namespace": f"cache-{host}"})
        manager.sync()
        managers.append(manager)
        counts.append(provider.embedded)
    assert counts[0] == 5
    assert counts[1] == 0, "the second host must take every vector from the shared cache"
    assert managers[1].status().vectors == 5
    assert _paths(managers[1], "otters")
    for manager in managers:
        manager.close()


def test_doctor_reports_server_version_and_vector(pg_server: Any) -> None:
    facts = check_server(PostgresConfig(dsn=pg_server.dsn))
    assert facts["connection"] == "ok"
    assert "PostgreSQL 16" in facts["server_version"] and "(ok)" in facts["server_version"]
    assert facts["vector_extension"].startswith("0.8")
    down = check_server(
        PostgresConfig(dsn="postgresql://postgres@127.0.0.1:1/x", connect_timeout=1)
    )
    assert down["connection"].startswith("failed: postgres server 127.0.0.1:1/x unreachable")
    assert "not configured" in check_server(PostgresConfig())["dsn"]


def test_cli_through_the_entry_point(pg_server: Any, tmp_path: Path) -> None:
    """``memwell`` finds the plugin by its entry point; doctor and search use the config."""
    ws = write_workspace(tmp_path / "ws")
    (ws / "memwell.toml").write_text(
        f'backend = "postgres"\nprovider = "none"\n\n[backends.postgres]\n'
        f'dsn = "{pg_server.dsn}"\nnamespace = "cli-test"\n',
        encoding="utf-8",
    )
    env = {**os.environ, "MEMWELL_WORKSPACE": str(ws), "XDG_CONFIG_HOME": str(tmp_path / "cfg")}

    def run(*args: str) -> str:
        done = subprocess.run(
            [sys.executable, "-m", "memwell", *args],
            env=env,
            cwd=ws,
            capture_output=True,
            text=True,
            timeout=120,
            check=True,
        )
        return done.stdout

    report = json.loads(run("doctor", "--json"))
    assert report["backend postgres"]["connection"] == "ok"
    hits = json.loads(run("search", "Zanzibar", "--json"))["results"]  # syncs first
    assert hits and hits[0]["path"] == "memory/2026-01-02.md"
    with psycopg.connect(pg_server.dsn) as conn:  # served by postgres, not a fallback
        files = conn.execute(
            "SELECT count(*) FROM memwell.files WHERE namespace = 'cli-test'"
        ).fetchone()
    assert files == (3,)


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=300))
def test_binary_tsvectors_round_trip_through_the_server(pg_server: Any, text: str) -> None:
    """Whatever the text (quotes, backslashes, CJK, marks), the server reads memwell's binary
    ``tsvector`` as exactly memwell's terms, each at the positions it occurs at."""
    clean = text.replace("\x00", "")
    indexed = index_text(clean)
    with psycopg.connect(pg_server.dsn) as conn:
        conn.execute("CREATE TEMP TABLE t (doc text, tsv tsvector)")
        row = copy_binary.row([copy_binary.text(clean), copy_binary.tsvector(indexed.entries)])
        copy_binary.copy_rows(conn, sql.Identifier("t"), "doc, tsv", [row])
        rows = conn.execute("SELECT lexeme, positions FROM t, unnest(t.tsv)").fetchall()
        assert conn.execute("SELECT doc FROM t").fetchone() == (clean,)
    expected: dict[str, list[int]] = {}
    for pos, term in enumerate(terms_of(clean), start=1):
        expected.setdefault(term, []).append(pos)
    assert {lexeme: list(p) for lexeme, p in rows} == {t: p[:256] for t, p in expected.items()}
    assert indexed.length == length_of(clean)
    if not any(map(is_cjk_char, unicodedata.normalize("NFC", clean))):  # else: fewer tokens
        assert indexed.length == sum(map(len, expected.values()))


def test_term_stats_follow_edits_and_deletes(build: Build, tmp_path: Path, pg_server: Any) -> None:
    """BM25's document frequencies stay equal to a recount after incremental writes."""
    ws = write_workspace(tmp_path / "ws")
    memory = build(ws, provider="none")
    memory.sync()
    (ws / "memory" / "projects.md").write_text(
        "# Projects\n\nTomatoes need watering. Tomatoes love sun.\n", encoding="utf-8"
    )
    (ws / "memory" / "added.md").write_text("# Added\n\nwatering cans and sun hats\n", "utf-8")
    memory.sync()
    (ws / "memory" / "added.md").unlink()
    memory.sync()
    with psycopg.connect(pg_server.dsn) as conn:
        kept = dict(
            conn.execute(
                "SELECT s.lexeme, s.df FROM memwell.term_stats s JOIN memwell.namespaces n "
                "USING (namespace, generation) WHERE s.namespace = %s AND s.df <> 0",
                (memory.namespace,),
            ).fetchall()
        )
        recount = dict(
            conn.execute(
                "SELECT word, ndoc FROM ts_stat(format('SELECT c.tsv FROM memwell.chunks c "
                "JOIN memwell.namespaces n USING (namespace, generation) "
                "WHERE c.namespace = %%L', %s::text))",
                (memory.namespace,),
            ).fetchall()
        )
    assert kept == recount and kept["tomato"] >= 1 and "hat" not in kept
