"""Recall cache and batch search benchmark (issue 19): latency by tier, search_many ratio.

    python bench/bench_recall_cache.py [--chunks 10000] [--queries 100]

Builtin backend, ``--chunks`` chunks. Documents get 384-d hash vectors (indexing a corpus with
the model would take minutes and does not change search cost); queries are embedded by the
real local all-MiniLM-L6-v2 model, so the semantic tier and the backend tier pay the real
query-embedding cost. Timings on a shared machine are noisy: each figure is the median of
this run, and ratios compare figures of the same run. The load average is printed.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import memwell_sqlite.plugin
from bench_builtin import _MiniLMQueries, print_table, record, timed
from corpus import TOPICS, WORDS, generate
from memwell.contract.config import MemwellSettings
from memwell.contract.descriptors import ProviderContext
from memwell.contract.manager import MemorySearchManager
from memwell.recall.manager import RecallCachedManager
from memwell.registry.plugins import PluginRegistry, get_registry
from memwell.runtime.factory import close_all, open_memory
from memwell.testing import HashEmbeddingProvider, hash_provider_plugin


def queries(count: int, seed: int = 19) -> list[str]:
    """``count`` distinct questions built from the corpus vocabulary."""
    rng = random.Random(seed)
    out: dict[str, None] = {}
    while len(out) < count:
        words = [rng.choice(TOPICS), *rng.sample(WORDS, 4)]
        out[f"what did we note about {' '.join(words)}"] = None
    return list(out)


def paraphrase(query: str) -> str:
    """The same question with other casing and punctuation: an exact-tier miss whose
    MiniLM embedding is (nearly) the same."""
    return f"{query.upper()}?!"


def p50_ms(fn: Callable[[str], object], texts: Sequence[str]) -> tuple[float, float]:
    """Median wall and process-CPU milliseconds per call (CPU time shows the cost on a busy
    machine, where wall time mostly measures waiting for a core)."""
    wall, cpu = [], []
    for text in texts:
        start, start_cpu = time.perf_counter(), time.process_time()
        fn(text)
        wall.append((time.perf_counter() - start) * 1000)
        cpu.append((time.process_time() - start_cpu) * 1000)
    return statistics.median(wall), statistics.median(cpu)


def open_ws(ws: Path, reg: PluginRegistry, **extra: Any) -> MemorySearchManager:
    data: dict[str, Any] = {
        "provider": "hash",
        "chunking": {"tokens": 64, "overlap": 0},
        "sync": {"watch": False, "on_search": False},
        **extra,
    }
    return open_memory(ws, settings=MemwellSettings.model_validate(data), registry=reg)


def verdict(value: float, limit: float) -> str:
    return f"(target < {limit:g} ms: {'met' if value < limit else 'MISSED'})"


def bench(tmp: Path, chunks: int, count: int) -> None:
    if "local" not in get_registry().providers:
        sys.exit("the local provider (memwell-local) is needed for the MiniLM query figures")
    spec = get_registry().providers["local"]
    local = spec.create(ProviderContext(tmp, MemwellSettings(), spec.default_model))
    minilm = PluginRegistry(load_entry_points=False)
    minilm.register(memwell_sqlite.plugin, "builtin")
    minilm.register(hash_provider_plugin(_MiniLMQueries(local)), "hash")
    ws = tmp / "ws"
    generate(ws, chunks // 6, paragraphs=6, words=25)
    memory = open_ws(ws, minilm)
    assert isinstance(memory, RecallCachedManager)
    memory.sync()
    actual = memory.status().chunks
    memory.warm()
    asked = queries(count)
    # -- tiers -------------------------------------------------------------------------------
    backend, _ = p50_ms(lambda q: memory.search(q), asked)  # every query new: backend tier
    exact, _ = p50_ms(lambda q: memory.search(q), asked)  # the same again: exact tier
    before = memory.cache_status()
    semantic, semantic_cpu = p50_ms(lambda q: memory.search(q), [paraphrase(q) for q in asked])
    after = memory.cache_status()
    assert after.semantic is not None and before.semantic is not None
    hit_rate = (after.semantic.hits - before.semantic.hits) / count
    record(f"backend tier (miss) at {actual} chunks, p50", f"{backend:.2f} ms")
    record("exact tier (L1) hit, p50", f"{exact:.3f} ms", verdict(exact, 1))
    record(
        "semantic tier (L2) hit, p50 (MiniLM query embedding)",
        f"{semantic:.2f} ms ({hit_rate:.0%} of paraphrases hit)",
        verdict(semantic, 10),
    )
    record("  its process CPU time, p50", f"{semantic_cpu:.2f} ms", verdict(semantic_cpu, 10))
    embed, embed_cpu = p50_ms(local.embed_query, [paraphrase(q) + " again" for q in asked])
    record(
        "  of which MiniLM query embedding alone, p50", f"{embed:.2f} ms ({embed_cpu:.2f} ms CPU)"
    )
    record("backend / exact", f"{backend / exact:.0f}x")
    record("backend / semantic", f"{backend / semantic:.1f}x")
    close_all()
    # -- search_many against one-by-one ------------------------------------------------------
    # Every round asks queries never asked before in its process: the query-vector memo
    # would otherwise answer the later rounds and hide the embedding (batched or not).
    for label, reg in (("MiniLM queries", minilm), ("hash queries", _hash_registry())):
        memory = open_ws(ws, reg, cache={"recall": {"enabled": False}})
        memory.sync()
        memory.warm()  # type: ignore[attr-defined]
        rounds = [queries(count, seed=20 + i) for i in range(6)]
        single = statistics.median(
            timed(lambda m=memory, qs=qs: [m.search(q) for q in qs]) for qs in rounds[:3]
        )
        batch = statistics.median(
            timed(lambda m=memory, qs=qs: m.search_many(qs))  # type: ignore[attr-defined]
            for qs in rounds[3:]
        )
        fresh = rounds[0]
        assert memory.search_many(fresh) == [memory.search(q) for q in fresh]  # type: ignore[attr-defined]
        record(
            f"{count} queries one by one vs search_many ({label})",
            f"{single * 1000:.0f} ms vs {batch * 1000:.0f} ms",
            f"(search_many {single / batch:.2f}x faster)",
        )
        close_all()


def _hash_registry() -> PluginRegistry:
    reg = PluginRegistry(load_entry_points=False)
    reg.register(memwell_sqlite.plugin, "builtin")
    reg.register(hash_provider_plugin(HashEmbeddingProvider("hash-384", 384)), "hash")
    return reg


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--chunks", type=int, default=10_000)
    parser.add_argument("--queries", type=int, default=100)
    args = parser.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    load = os.getloadavg()
    started = time.strftime("%Y-%m-%d %H:%M")
    with tempfile.TemporaryDirectory(prefix="memwell-recall-bench-") as tmp:
        bench(Path(tmp), args.chunks, args.queries)
    print_table(
        f"memwell recall benchmark, {started}, {os.cpu_count()} cores, "
        f"load average at start {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}"
    )


if __name__ == "__main__":
    main()
