"""HNSW recall of the postgres backend on real embeddings, per ``ef_search`` (issue 46).

    python bench/bench_postgres_recall.py [--dataset ../shared/data/beir-scifact] [--dsn URL]

SciFact's corpus is indexed by the postgres backend with the shipped local model
(all-MiniLM-L6-v2 through ``memwell-local``, offline), as ``memwell index`` would, its
chunks searched through the generation's HNSW index. For every SciFact claim embedded by the
same model, the exact top ``k`` (every vector compared) is set against what the HNSW index
returns with each ``ef_search``: recall@k is the share of the exact top ``k`` found, averaged
over the claims. The chunk vectors are cached (``--cache``, default under the system's temp
dir), so a second run embeds nothing; the server's shared embedding cache is filled from it.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests" / "postgres"))

from memwell.contract.config import load_settings  # noqa: E402
from memwell.evaluation.beir import load_dataset, write_corpus  # noqa: E402
from memwell.registry.plugins import get_registry  # noqa: E402
from memwell.runtime.factory import create_backend  # noqa: E402
from memwell_postgres.db import Conn  # noqa: E402
from memwell_postgres.manager import PostgresMemoryManager  # noqa: E402
from memwell_postgres.schema import generation_filter, vector_expr, vector_filter  # noqa: E402
from pg_server import server_dsn  # noqa: E402
from psycopg import sql  # noqa: E402

SCIFACT = HERE.parent.parent / "shared" / "data" / "beir-scifact"
EF_SEARCH = (40, 64, 100, 200, 400)


def _nearest(
    manager: PostgresMemoryManager, conn: Conn, qvec: np.ndarray, k: int, *, exact: bool
) -> list[int]:
    active = manager.active
    assert active is not None
    dims = int(qvec.shape[0])
    expr = sql.SQL("embedding") if exact else vector_expr(dims)
    query = sql.SQL(
        "SELECT id FROM {chunks} WHERE {gen} AND {vfilter} "
        "ORDER BY {expr} <=> %s::vector({dims}) LIMIT {k}"
    ).format(
        chunks=manager.store.t("chunks"),
        gen=generation_filter(manager.namespace, active.generation),
        vfilter=vector_filter(manager.indexer.model(), dims),
        expr=expr,
        dims=sql.Literal(dims),
        k=sql.Literal(k),
    )
    return [int(r[0]) for r in conn.execute(query, (qvec,)).fetchall()]


def _fill_cache(manager: PostgresMemoryManager, cache: Path) -> None:
    key = manager.indexer.cache_key()
    if key is None or not cache.is_file():
        return
    data = np.load(cache)
    with manager.db.connection() as conn:
        manager.store.cache_vectors(
            conn, key, dict(zip(data["hashes"], data["vectors"], strict=True))
        )


def _save_cache(manager: PostgresMemoryManager, cache: Path) -> None:
    key = manager.indexer.cache_key()
    assert key is not None
    with manager.db.connection() as conn:
        hashes = [
            r[0]
            for r in conn.execute(
                manager.store.q("SELECT DISTINCT hash FROM {c} WHERE namespace = %s", c="chunks"),
                (manager.namespace,),
            ).fetchall()
        ]
        vectors = manager.store.cached_vectors(conn, key, hashes)
    cache.parent.mkdir(parents=True, exist_ok=True)
    np.savez(cache, hashes=np.array(list(vectors)), vectors=np.stack(list(vectors.values())))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--dataset", type=Path, default=SCIFACT)
    parser.add_argument("--dsn", help="an existing server (default: start a disposable one)")
    parser.add_argument("-k", type=int, default=40, help="the candidate count compared")
    parser.add_argument(
        "--cache",
        type=Path,
        default=Path(tempfile.gettempdir()) / "memwell-bench" / "scifact-minilm.npz",
    )
    args = parser.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    dataset = load_dataset(args.dataset, "train")
    registry = get_registry()
    with server_dsn(args.dsn) as dsn, tempfile.TemporaryDirectory(prefix="memwell-") as tmp:
        workspace = Path(tmp) / "scifact"
        write_corpus(dataset, workspace / "memory")
        settings = load_settings(
            workspace,
            overrides={
                "backend": "postgres",
                "provider": "local",
                "backends": {
                    "postgres": {"dsn": dsn, "namespace": "recall-scifact", "exact_search_below": 0}
                },
                "sync": {"watch": False, "on_search": False},
            },
            environ={},
            user_config=Path(tmp) / "no-user-config.toml",
            registry=registry,
        )
        manager: Any = create_backend("postgres", settings, registry, workspace)
        _fill_cache(manager, args.cache)
        started = time.perf_counter()
        manager.sync(force=True)
        report = manager.last_sync
        print(
            f"# SciFact, {manager.status().chunks} chunks, {manager.indexer.model()}, "
            f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; indexed in "
            f"{time.perf_counter() - started:.0f} s ({report.embedded} embedded, "
            f"{report.cached} from the cache)"
        )
        _save_cache(manager, args.cache)
        manager.search("warm up", max_results=1)
        queries = list(dataset.queries.values())
        qvecs = [manager.runtime.embed_query(q) for q in queries]
        with manager.db.connection() as conn:
            truth = [set(_nearest(manager, conn, v, args.k, exact=True)) for v in qvecs]
        print(f"| ef_search | recall@{args.k} (mean) | worst query | queries |")
        print("|---|---|---|---|")
        for ef in EF_SEARCH:
            with manager.db.connection(ef_search=ef) as conn:
                recalls = [
                    len(set(_nearest(manager, conn, v, args.k, exact=False)) & exact) / len(exact)
                    for v, exact in zip(qvecs, truth, strict=True)
                ]
            print(
                f"| {ef} | {statistics.mean(recalls):.4f} | {min(recalls):.3f} | {len(recalls)} |"
            )
        manager.close()


if __name__ == "__main__":
    main()
