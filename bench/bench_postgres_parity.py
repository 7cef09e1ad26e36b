"""SciFact (BEIR layout) with the builtin and the postgres backends, the same way (issue 18).

    python bench/bench_postgres_parity.py --dataset ../shared/data/beir-scifact --split train \
        [--dsn URL] [--mode keyword --mode hybrid] [--backend builtin --backend postgres]

Each backend indexes the same Markdown corpus (``memwell.evaluation.write_corpus``) and answers
every judged query through ``memwell.evaluation.evaluate``, as ``memwell eval`` does. Hybrid
uses memwell's deterministic hashing embedding (``memwell.testing.HashEmbeddingProvider``,
bag of words plus character trigrams, 256 dimensions): it costs no model time, so both
backends can be compared on the whole split on a busy machine; it is not a semantic model,
so its hybrid figures are not MiniLM's. Without ``--dsn`` a disposable server is started.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests" / "postgres"))

import memwell_postgres.plugin as pg_plugin  # noqa: E402
import memwell_sqlite.plugin as sqlite_plugin  # noqa: E402
from memwell.contract.config import load_settings  # noqa: E402
from memwell.evaluation.beir import evaluate, load_dataset, write_corpus  # noqa: E402
from memwell.registry.plugins import PluginRegistry  # noqa: E402
from memwell.runtime.factory import create_backend  # noqa: E402
from memwell.testing import hash_provider_plugin  # noqa: E402
from pg_server import server_dsn  # noqa: E402

METRICS = ("ndcg_at_10", "recall_at_10", "recall_at_100", "mrr_at_10")


def _registry() -> PluginRegistry:
    registry = PluginRegistry(load_entry_points=False)
    registry.register(hash_provider_plugin(), "hash")
    registry.register(sqlite_plugin, "builtin")
    registry.register(pg_plugin, "postgres")
    return registry


def measure(backend: str, mode: str, dataset: Any, root: Path, dsn: str) -> dict[str, float]:
    registry = _registry()
    workspace = root / f"{backend}-{mode}"
    path_to_doc = write_corpus(dataset, workspace / "memory")
    namespace = f"parity-{root.name}-{workspace.name}"
    settings = load_settings(
        workspace,
        overrides={
            "backend": backend,
            "provider": "none" if mode == "keyword" else "hash",
            "model": "hash-256",
            "backends": {"postgres": {"dsn": dsn, "namespace": namespace}},
            "sync": {"watch": False, "on_search": False},
        },
        environ={},
        user_config=root / "no-user-config.toml",
        registry=registry,
    )
    manager = create_backend(backend, settings, registry, workspace)
    try:
        started = time.perf_counter()
        manager.sync(force=True)
        indexed = time.perf_counter() - started
        metrics = evaluate(
            dataset, lambda q: manager.search(q, max_results=100, min_score=0.0), path_to_doc
        )
        return metrics | {"index_s": indexed, "chunks": float(manager.status().chunks)}
    finally:
        manager.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--dataset", type=Path, required=True)
    parser.add_argument("--split", default="train")
    parser.add_argument("--mode", action="append", choices=["keyword", "hybrid"])
    parser.add_argument("--backend", action="append", choices=["builtin", "postgres"])
    parser.add_argument("--dsn", help="an existing server (default: start a disposable one)")
    args = parser.parse_args()
    dataset = load_dataset(args.dataset, args.split)
    stamp = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    print(f"# {args.dataset.name} [{args.split}], {stamp}, hashing embedding for hybrid")
    print("| mode | backend | nDCG@10 | Recall@10 | Recall@100 | MRR@10 | chunks |")
    print("|---|---|---|---|---|---|---|")
    with server_dsn(args.dsn) as dsn, tempfile.TemporaryDirectory(prefix="memwell-") as tmp:
        for mode in args.mode or ["keyword", "hybrid"]:
            for backend in args.backend or ["builtin", "postgres"]:
                m = measure(backend, mode, dataset, Path(tmp), dsn)
                cells = " | ".join(f"{m[k]:.4f}" for k in METRICS)
                print(f"| {mode} | {backend} | {cells} | {m['chunks']:.0f} |", flush=True)


if __name__ == "__main__":
    main()
