"""Store and recall latency of the lancedb backend's long-term memories at 10k memories.

Usage: python bench/bench_lancedb.py [--memories 10000] [--ops 200] [--dims 384]

Bulk load: a Markdown journal of N generated memories is written and loaded with
``rebuild_from_journal()`` (the hash provider embeds every text: offline and deterministic).
Then ``--ops`` stores (embed + duplicate check + insert + journal append) and ``--ops``
recalls (embed + top-5 cosine search) are timed one by one. Prints one line.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import tempfile
import time
import uuid
from pathlib import Path

import memwell_lancedb.plugin as lance_plugin
from memwell.contract.config import MemwellSettings
from memwell.registry.plugins import PluginRegistry
from memwell.runtime.factory import close_all, open_memory
from memwell.testing import hash_provider_plugin
from memwell_lancedb.journal import PREAMBLE, format_entry
from memwell_lancedb.manager import as_lance_manager
from memwell_lancedb.memory import CATEGORIES, Memory

WORDS = [
    *("alpha", "billing", "cluster", "deploy", "editor", "friday", "gateway", "harbor"),
    *("invoice", "jasmine", "kestrel", "lighthouse", "migration", "network", "otter"),
    *("postgres", "quarterly", "rotation", "staging", "tuesday", "umbrella", "vendor"),
    *("walrus", "xylophone", "yellow", "zeppelin"),
]


def sentence(rng: random.Random) -> str:
    words = " ".join(rng.sample(WORDS, 6))
    return f"Note {uuid.UUID(int=rng.getrandbits(128)).hex[:12]}: {words}."


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(fraction * (len(ordered) - 1)))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--memories", type=int, default=10_000)
    parser.add_argument("--ops", type=int, default=200)
    parser.add_argument("--dims", type=int, default=384)
    args = parser.parse_args()
    rng = random.Random(7)
    registry = PluginRegistry(load_entry_points=False)
    registry.register(hash_provider_plugin(), "hash")
    registry.register(lance_plugin, "lancedb")
    with tempfile.TemporaryDirectory() as tmp:
        workspace = Path(tmp)
        settings = MemwellSettings(backend="lancedb", provider="hash", model=f"hash-{args.dims}")
        manager = as_lance_manager(open_memory(workspace, settings=settings, registry=registry))
        assert manager is not None and manager.journal is not None
        memories = [
            Memory(
                id=str(uuid.UUID(int=rng.getrandbits(128), version=4)),
                text=sentence(rng),
                category=rng.choice(CATEGORIES),
                importance=0.7,
                created_at=1_764_000_000_000 + i,
            )
            for i in range(args.memories)
        ]
        manager.journal.write_text(PREAMBLE + "\n" + "".join(map(format_entry, memories)))
        started = time.perf_counter()
        loaded = manager.memories.rebuild_from_journal().count
        load_s = time.perf_counter() - started

        store_ms: list[float] = []
        created = 0
        for _ in range(args.ops):
            text = sentence(rng)
            started = time.perf_counter()
            outcome = manager.memories.store(text, category="fact")
            store_ms.append((time.perf_counter() - started) * 1000)
            created += outcome.action == "created"
        recall_ms: list[float] = []
        for _ in range(args.ops):
            query = " ".join(rng.sample(WORDS, 3))
            started = time.perf_counter()
            manager.memories.recall(query, limit=5)
            recall_ms.append((time.perf_counter() - started) * 1000)
        close_all()
    print(
        f"lancedb long-term memory @ {loaded} memories ({args.dims}-d hash-provider vectors, "
        f"bulk load via rebuild_from_journal {load_s:.1f} s, local disk, flat cosine search): "
        f"store median {statistics.median(store_ms):.1f} ms "
        f"p95 {percentile(store_ms, 0.95):.1f} ms "
        f"({created}/{args.ops} created); "
        f"recall median {statistics.median(recall_ms):.1f} ms "
        f"p95 {percentile(recall_ms, 0.95):.1f} ms ({args.ops} queries, top 5); "
        f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs"
    )


if __name__ == "__main__":
    main()
