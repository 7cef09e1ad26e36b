"""Builtin backend benchmark (issue 3): index, no-op resync and search latency.

Prints one table. Timings on a shared 2-core machine are noisy: each figure is the median of
its repetitions from this run, and the targets are compared in the last column.

    python bench/bench_builtin.py [--quick]

Search latency excludes model time: vectors come from memwell's 384-d hashing provider
(``memwell.testing.HashEmbeddingProvider``), so the figures measure memwell, not the model.
The "1k with local embeddings" row uses the real all-MiniLM-L6-v2 model.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import memwell_sqlite.plugin
from corpus import generate
from memwell.contract.config import MemwellSettings
from memwell.contract.manager import MemorySearchManager
from memwell.registry.plugins import PluginRegistry, get_registry
from memwell.runtime.factory import close_all, open_memory
from memwell.testing import HashEmbeddingProvider, hash_provider_plugin

QUERIES = [
    "which port does the amber service listen on",
    "deployment rollout flag decided",
    "database backup restore schedule",
    "who owns the billing invoice vendor contract",
    "incident alert dashboard latency error",
    "kubernetes cluster node worker retry",
    "security secret token region",
    "hiring budget sprint goal",
]

rows: list[tuple[str, str, str]] = []


def record(name: str, value: str, target: str = "") -> None:
    rows.append((name, value, target))
    print(f"  {name}: {value} {target}", file=sys.stderr, flush=True)


def registry(dims: int = 384) -> PluginRegistry:
    reg = PluginRegistry(load_entry_points=False)
    reg.register(memwell_sqlite.plugin, "builtin")
    reg.register(hash_provider_plugin(HashEmbeddingProvider(f"hash-{dims}", dims)), "hash")
    return reg


def open_ws(ws: Path, reg: PluginRegistry, **extra: Any) -> MemorySearchManager:
    # The recall cache is off: it would answer each repeated query from memory, which
    # measures the cache (bench/bench_recall_cache.py), not search.
    data: dict[str, Any] = {
        "sync": {"watch": False, "on_search": False},
        "cache": {"recall": {"enabled": False}},
        **extra,
    }
    return open_memory(ws, settings=MemwellSettings.model_validate(data), registry=reg)


def timed(fn: Callable[[], object]) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def latency(manager: MemorySearchManager, rounds: int) -> tuple[float, float]:
    manager.search(QUERIES[0])  # warm: loads the vector matrix once
    samples = []
    for _ in range(rounds):
        for q in QUERIES:
            start = time.perf_counter()
            manager.search(q)
            samples.append((time.perf_counter() - start) * 1000)
    samples.sort()
    return statistics.median(samples), samples[int(len(samples) * 0.95)]


def verdict(value: float, limit: float) -> str:
    return f"(target < {limit:g}: {'met' if value < limit else 'MISSED'})"


def bench(tmp: Path, quick: bool) -> None:
    big = 2000 if quick else 10_000
    small = 1000
    # -- indexing, keyword-only ------------------------------------------------------------
    for files in (small, big):
        ws = tmp / f"kw{files}"
        generate(ws, files)
        manager = open_ws(ws, registry(), provider="none")
        seconds = timed(lambda m=manager: m.sync())
        chunks = manager.status().chunks
        record(f"index {files} files, keyword-only", f"{seconds:.2f} s ({chunks} chunks)")
    noop = statistics.median(timed(lambda m=manager: m.sync()) for _ in range(3))
    record(f"no-op resync of {big} files", f"{noop * 1000:.0f} ms", verdict(noop, 1.0))
    close_all()
    # -- indexing with the local model -----------------------------------------------------
    if "local" in get_registry().providers:
        ws = tmp / "local1k"
        generate(ws, small if not quick else 200)
        reg = PluginRegistry(load_entry_points=False)
        reg.register(memwell_sqlite.plugin, "builtin")
        reg.register(get_registry().pm.get_plugin("local"), "local")
        manager = open_ws(ws, reg, provider="local")
        seconds = timed(lambda m=manager: m.sync())
        status = manager.status()
        record(
            f"index {len(list((ws / 'memory').rglob('*.md')))} files, local MiniLM",
            f"{seconds:.1f} s ({status.chunks} chunks, {status.chunks / seconds:.1f} chunks/s)",
        )
        close_all()
    # -- search latency at 10k and 100k chunks ---------------------------------------------
    sizes = [(10_000, 100)] + ([] if quick else [(100_000, 16)])
    for chunks, tokens in sizes:
        files = chunks // 6
        chunking = {"tokens": tokens, "overlap": 0}
        limit = 20 if chunks <= 10_000 else 60
        modes = {
            "keyword": {"provider": "none"},
            "vector": {"provider": "hash", "query": {"hybrid": {"enabled": False}}},
            "hybrid": {"provider": "hash"},
        }
        for mode, extra in modes.items():
            family = "keyword" if mode == "keyword" else "vectors"
            ws = tmp / f"search{chunks}-{family}"
            if not ws.exists():
                generate(ws, files, paragraphs=6, words=max(6, tokens // 2))
            manager = open_ws(ws, registry(), chunking=chunking, **extra)
            seconds = timed(lambda m=manager: m.sync())
            actual = manager.status().chunks
            if mode != "hybrid":
                record(f"index {actual} chunks ({family})", f"{seconds:.1f} s")
            p50, p95 = latency(manager, 10)
            target = verdict(p50, limit) if mode == "hybrid" else ""
            record(f"{mode} search at {actual} chunks p50/p95", f"{p50:.1f} / {p95:.1f} ms", target)
            close_all()


class _MiniLMQueries(HashEmbeddingProvider):
    """Hash vectors for documents (fast indexing) but the real MiniLM for queries.

    Latency does not depend on what the vectors mean, only on their size (384 for both), so
    this measures search with a real query-embedding cost without embedding 10k chunks first.
    """

    def __init__(self, local: Any) -> None:
        super().__init__("hash-384", 384)
        self.local = local

    def embed_query(self, text: str) -> Any:
        return self.local.embed_query(text)


def bench_local_warm(tmp: Path, chunks: int) -> None:
    """Warm hybrid search p50/p95 at ``chunks`` chunks, real MiniLM query embedding included."""
    if "local" not in get_registry().providers:
        return
    from memwell.contract.descriptors import ProviderContext

    spec = get_registry().providers["local"]
    settings = MemwellSettings()
    local = spec.create(ProviderContext(tmp, settings, spec.default_model))
    reg = PluginRegistry(load_entry_points=False)
    reg.register(memwell_sqlite.plugin, "builtin")
    reg.register(hash_provider_plugin(_MiniLMQueries(local)), "hash")
    ws = tmp / f"warm{chunks}"
    generate(ws, chunks // 6, paragraphs=6, words=25)
    manager = open_ws(ws, reg, provider="hash", chunking={"tokens": 64, "overlap": 0})
    manager.sync()
    actual = manager.status().chunks
    p50, p95 = latency(manager, 10)
    record(
        f"warm hybrid at {actual} chunks, MiniLM query p50/p95",
        f"{p50:.1f} / {p95:.1f} ms",
        verdict(p50, 30),
    )
    close_all()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="small sizes, for a smoke run")
    parser.add_argument("--only-warm", action="store_true", help="only the local-model row")
    args = parser.parse_args()
    started = time.strftime("%Y-%m-%d %H:%M")
    with tempfile.TemporaryDirectory(prefix="memwell-bench-") as tmp:
        if args.only_warm:
            bench_local_warm(Path(tmp), 10_000)
        else:
            bench(Path(tmp), args.quick)
            bench_local_warm(Path(tmp), 10_000)
    print_table(f"memwell builtin benchmark, {started}, {os.cpu_count()} cores")


def print_table(title: str) -> None:
    """Print ``title`` and the recorded rows as a Markdown table."""
    print(title)
    print(f"| {'measure':<45} | {'result':<32} | target |")
    print(f"|{'-' * 47}|{'-' * 34}|--------|")
    for name, value, target in rows:
        print(f"| {name:<45} | {value:<32} | {target} |")


if __name__ == "__main__":
    main()
