"""The postgres backend ranks like the builtin one: same corpus, same queries, same results.

Both backends index one hand-made workspace (stemming, stop words, repeated terms, a term in
most files, CJK, lengths that differ so BM25's length normalisation matters) with the same
embedding provider; every query must return the same files and lines in the same order,
with the same scores, keyword-only and hybrid (hits with equal scores may come in either
order).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import memwell_sqlite.plugin as sqlite_plugin
import pytest
from memwell.contract.config import load_settings
from memwell.contract.manager import MemorySearchManager
from memwell.registry.plugins import PluginRegistry
from memwell.runtime.factory import create_backend
from memwell.testing.conformance import write_workspace

FILES = {
    "MEMORY.md": "# Memory\n\nThe team deploys on Fridays. Deployment notes live in memory/.\n",
    "memory/deploy.md": (
        "# Deploys\n\nWe deployed the billing service twice: deploying on Friday broke the "
        "invoice queue, so deploys now wait for Monday.\n"
    ),
    "memory/billing.md": (
        "# Billing\n\nInvoices are generated nightly. The billing service retries failed "
        "payments three times, then pages the on-call engineer.\n\n"
        "## Vendors\nStripe handles cards; the vendor contract renews in March.\n"
    ),
    "memory/incident.md": (
        "# Incident 42\n\nThe search cluster ran out of disk. Latency alerts fired for an hour; "
        "the team added a disk alert and a runbook. Search latency is back under 80 ms.\n"
    ),
    "memory/people.md": (
        "# People\n\nDana owns billing. Chen owns search and the cluster. Farah owns deploys "
        "and the release calendar. The team meets on Mondays.\n"
    ),
    "memory/long.md": "# Long notes\n\n"
    + "\n\n".join(
        f"Paragraph {i}: the team reviewed the roadmap, the cluster budget and the release "
        f"plan; item {i} was deferred."
        for i in range(12)
    )
    + "\n",
    "memory/cjk.md": "# 会议\n\n我们在北京开会，讨论了搜索集群的预算。\n",
}

QUERIES = [
    "deploy friday",
    "billing service retries",
    "search cluster latency",
    "who owns billing",
    "the team",
    "vendor contract march",
    "roadmap budget release",
    "北京 预算",
    "会 京",  # one character each: a prefix query in the builtin, a unigram in Postgres
    "incident runbook disk alert",
    "nothing matches zebra",
]


def _settings(workspace: Path, registry: PluginRegistry, backend: str, dsn: str, mode: str) -> Any:
    return load_settings(
        workspace,
        overrides={
            "backend": backend,
            "provider": "none" if mode == "keyword" else "hash",
            "query": {"hybrid": {"enabled": mode != "vector"}},
            "backends": {
                "postgres": {
                    "dsn": dsn,
                    "namespace": f"parity-{mode}",
                    # "hybrid-hnsw": through the HNSW index (exact on a corpus this small)
                    "exact_search_below": 0 if mode == "hybrid-hnsw" else 20_000,
                }
            },
            "sync": {"watch": False, "on_search": False},
            "chunking": {"tokens": 40, "overlap": 8},
        },
        environ={},
        user_config=workspace.parent / "no-user-config.toml",
        registry=registry,
    )


def _ranking(
    manager: MemorySearchManager, query: str, floored: bool = False
) -> list[tuple[float, str, int, int]]:
    """(score, path, lines) in rank order; hits with equal scores (to 4 decimals, so the
    order in which floats were summed does not matter) in path and line order. Every hit is
    asked for, so no cut-off falls between hits whose scores differ only in float noise;
    ``floored``: the default ``min_score`` applies."""
    found = manager.search(query, max_results=50, **({} if floored else {"min_score": 0.0}))
    hits = [(round(r.score, 4), r.path, r.start_line, r.end_line) for r in found]
    return sorted(hits, key=lambda h: (-h[0], h[1:]))


@pytest.mark.parametrize("mode", ["keyword", "hybrid", "hybrid-hnsw", "vector"])
def test_postgres_ranks_like_builtin(
    mode: str, tmp_path: Path, pg_server: Any, registry: PluginRegistry
) -> None:
    """The same hits with every score, and the same hits kept by the default floor (which
    weighs calibrated scores and, in hybrid mode, the share of the question a keyword hit
    covers)."""
    registry.register(sqlite_plugin, "builtin")
    managers: dict[str, MemorySearchManager] = {}
    for backend in ("builtin", "postgres"):
        workspace = write_workspace(tmp_path / backend, FILES)
        settings = _settings(workspace, registry, backend, pg_server.dsn, mode)
        managers[backend] = create_backend(backend, settings, registry, workspace)
        managers[backend].sync()
    try:
        for query in QUERIES:
            for floored in (False, True):
                builtin = _ranking(managers["builtin"], query, floored)
                postgres = _ranking(managers["postgres"], query, floored)
                assert postgres == builtin, (query, floored)
        for query in ("deploy friday", "会 京"):
            assert _ranking(managers["postgres"], query), f"the corpus must match {query!r}"
        if mode != "keyword":  # the floor drops something, so the floored check means something
            dropped = [
                q
                for q in QUERIES
                if _ranking(managers["builtin"], q, True) != _ranking(managers["builtin"], q)
            ]
            assert dropped
    finally:
        for manager in managers.values():
            manager.close()


def _pruning_corpus() -> dict[str, str]:
    """40 files: ``alpha`` in 15 (under half, so it keeps its weight), the rarer ``zeta`` in 6,
    some zeta files long (length normalisation lowers them) and one short file saying alpha
    ten times, which outranks them without containing the rarest term."""
    files: dict[str, str] = {}
    filler = " ".join(f"word{i}" for i in range(60))
    for i in range(40):
        words = [f"note {i}"]
        if i < 15:
            words.append("alpha")
        if 20 <= i < 26:
            words.append("zeta" + (f" {filler}" if i % 2 else ""))
        files[f"memory/n{i:02d}.md"] = " ".join(words) + "\n"
    files["memory/heavy.md"] = "alpha " * 10 + "\n"
    return files


@pytest.mark.parametrize("max_results", [1, 2, 3, 8])
def test_pruned_keyword_candidates_are_exactly_bm25s_best(
    max_results: int, build: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import memwell_postgres.search as search

    memory = build(write_workspace(tmp_path / "ws", _pruning_corpus()), provider="none")
    memory.sync()

    def ranking() -> list[tuple[str, float]]:
        hits = memory.search("zeta alpha", max_results=max_results, min_score=0.0)
        return [(r.path, round(r.score, 6)) for r in hits]

    monkeypatch.setattr(search, "SEED_POSTINGS", 10**6)  # theta from every posting
    search.statement.cache_clear()
    unpruned = ranking()
    monkeypatch.setattr(search, "SEED_POSTINGS", 1)  # theta from one posting only
    search.statement.cache_clear()
    memory.active = None
    assert ranking() == unpruned
    search.statement.cache_clear()
    if max_results == 8:  # found by the second round: it lacks the rarest term
        assert "memory/heavy.md" in [p for p, _ in unpruned]
