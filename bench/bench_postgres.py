"""Postgres search benchmark (issues 18 and 46): the previous statements against the new one,
interleaved on one server and one data set.

    python bench/bench_postgres.py --chunks 100000 --chunks 300000 [--dsn URL] [--workdir DIR]
    python bench/bench_postgres.py --chunks 1000000 --clients 1 --clients 16 --no-previous
    python bench/bench_postgres.py --chunks 100000 --terms 4   # short, agent-style queries

Data, said with every figure: chunk text is synthetic, words drawn with their frequencies in
the SciFact corpus (``../shared/data/beir-scifact``), 40-160 words a chunk, so terms have a
real corpus's document frequencies; vectors are random unit vectors (384 dimensions, MiniLM's
size), so the vector side measures pgvector's cost, not a model's quality (``bench/
bench_postgres_recall.py`` measures recall on real embeddings). Queries are real SciFact
claims, each with a random unit vector. The chunks are loaded with the backend's own store
code (binary COPY, postings, HNSW), not by reading Markdown files.

"previous" is what the commit before issue 46 ran per hybrid search: the pool's health check,
the statistics statement, then BM25 over the ``tsvector`` of every chunk matching the rarest
terms (GIN index) with the HNSW candidates; "new" is :func:`memwell_postgres.search.run_search`
(one prepared statement, postings with MaxScore pruning). Both fetch 40 keyword and 40
vector candidates with their text. For each size and client count the two run in turn, twice,
and each figure is the median of its two rounds: p50 / p95 latency, queries/s, and server CPU
per search (user + system time of every server process over the round, divided by the
searches, counting only this benchmark's connections; other helpers' load on this 2-core
machine is printed with each line).
"""

from __future__ import annotations

import argparse
import gzip
import json
import logging
import math
import os
import re
import statistics
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests" / "postgres"))

import psutil  # noqa: E402
from memwell_postgres.config import PostgresConfig  # noqa: E402
from memwell_postgres.db import Conn, Database  # noqa: E402
from memwell_postgres.lexemes import QueryTerms, query_terms, tsquery_literal  # noqa: E402
from memwell_postgres.schema import (  # noqa: E402
    ensure_generation_indexes,
    generation_filter,
    generation_tag,
    vector_expr,
    vector_filter,
)
from memwell_postgres.search import Active, run_search  # noqa: E402
from memwell_postgres.store import ChunkRow, FileRow, Loaded, Store  # noqa: E402
from pg_server import server_dsn  # noqa: E402
from psycopg import sql  # noqa: E402

DIMS = 128
MODEL = "random:unit-128"
LIMIT = 40
EF_SEARCH = 100
CHUNKS_PER_FILE = 12
BATCH_FILES = 100
SCIFACT = HERE.parent.parent / "shared" / "data" / "beir-scifact"
_WORD = re.compile(r"[a-z][a-z0-9-]+")


# -- data -------------------------------------------------------------------------------------


def vocabulary(dataset: Path) -> tuple[list[str], np.ndarray]:
    """SciFact's words and their corpus frequencies (as probabilities)."""
    counts: Counter[str] = Counter()
    with gzip.open(dataset / "corpus.jsonl.gz", "rt", encoding="utf-8") as lines:
        for line in lines:
            doc = json.loads(line)
            counts.update(_WORD.findall(f"{doc['title']} {doc['text']}".lower()))
    words = [w for w, _ in counts.most_common()]
    freq = np.array([counts[w] for w in words], dtype=np.float64)
    return words, freq / freq.sum()


def claims(dataset: Path) -> list[str]:
    with (dataset / "queries.jsonl").open(encoding="utf-8") as lines:
        return [json.loads(line)["text"] for line in lines]


def unit_vectors(rng: np.random.Generator, count: int) -> np.ndarray:
    matrix = rng.standard_normal((count, DIMS)).astype(np.float32)
    return matrix / np.linalg.norm(matrix, axis=1, keepdims=True)


def files(
    words: list[str], probs: np.ndarray, chunks: int, seed: int = 5
) -> Iterator[tuple[str, list[ChunkRow]]]:
    rng = np.random.default_rng(seed)
    vocab = np.array(words)
    cdf = np.cumsum(probs)
    for f in range(math.ceil(chunks / CHUNKS_PER_FILE)):
        count = min(CHUNKS_PER_FILE, chunks - f * CHUNKS_PER_FILE)
        vectors = unit_vectors(rng, count)
        rows = []
        for i in range(count):
            drawn = np.searchsorted(cdf, rng.random(rng.integers(40, 161)) * cdf[-1])
            text = " ".join(vocab[np.minimum(drawn, len(vocab) - 1)])
            rows.append(ChunkRow(i * 10 + 1, i * 10 + 9, f"{f}-{i}", text, vectors[i]))
        yield f"memory/f{f:07d}.md", rows


def load(
    db: Database,
    store: Store,
    chunks: int,
    words: list[str],
    probs: np.ndarray,
    previous: bool = True,
) -> float:
    """Load ``chunks`` chunks as a full rebuild does; seconds taken. ``previous`` also builds
    the GIN index the previous statements need (not part of the backend's build)."""
    started = time.perf_counter()
    identity = {"bench": chunks}
    with db.connection() as conn:
        generation = store.begin_generation(conn, identity, "bench")
    loaded = Loaded()
    batch: list[tuple[str, list[ChunkRow]]] = []

    def flush() -> None:
        with db.connection() as conn, conn.transaction():
            conn.execute("SET LOCAL synchronous_commit = off")
            loaded.merge(store.insert_chunks(conn, generation, batch, MODEL))
            store.copy_files(
                conn, generation, [FileRow(p, p, 0, 0, "bench", "bench") for p, _ in batch]
            )
        batch.clear()

    for item in files(words, probs, chunks):
        batch.append(item)
        if len(batch) == BATCH_FILES:
            flush()
    if batch:
        flush()
    with db.connection() as conn:
        with conn.transaction():
            store.add_counts(conn, generation, loaded.chunks, loaded.tokens)
            store.copy_term_stats(conn, generation, loaded.df)
        build = ensure_generation_indexes(
            conn, store.schema, store.namespace, generation, (MODEL, DIMS), db.config
        )
        for warning in build.warnings:
            print(f"note: {warning}", flush=True)
        if previous:
            _previous_index(conn, store, generation)
        store.postings.analyze(conn)
        store.switch_to(conn, generation, identity)
        store.drop_generations(conn, "retired")
    return time.perf_counter() - started


def _previous_index(conn: Conn, store: Store, generation: int) -> None:
    """The GIN index the previous statements need (the new code no longer builds it)."""
    name = f"chunks_fts_{generation_tag(store.namespace, generation)}"
    conn.execute(
        sql.SQL("CREATE INDEX IF NOT EXISTS {} ON {} USING gin (tsv) WHERE {}").format(
            sql.Identifier(name),
            store.t("chunks"),
            generation_filter(store.namespace, generation),
        )
    )


# -- the previous statements (the commit before issue 46) -------------------------------------

K1, B, BUDGET = 1.2, 0.75, 20_000

_PREV_STATS = """
SELECT set_config('hnsw.ef_search', %(ef)s, false), n.generation,
       greatest(g.chunk_count, 1)::float8, greatest(g.token_count, 1)::float8,
       (SELECT array_agg(coalesce(s.df, 0) ORDER BY t.ord)
          FROM unnest(%(lexemes)s::text[]) WITH ORDINALITY AS t(lexeme, ord)
          LEFT JOIN {term_stats} s ON s.namespace = n.namespace
           AND s.generation = n.generation AND s.lexeme = t.lexeme)
FROM {namespaces} n JOIN {generations} g USING (namespace, generation)
WHERE n.namespace = %(ns)s"""

_PREV = """
WITH kw_terms AS (SELECT * FROM unnest(%(lexemes)s::text[], %(idfs)s::float8[]) AS t(lexeme, idf)),
kw AS (
    SELECT c.id,
           sum(k.idf * (u.tf * (%(k1)s + 1)) /
               (u.tf + %(k1)s * (1 - %(b)s + %(b)s * c.ntokens / %(avgdl)s))) AS score
    FROM {chunks} c
    CROSS JOIN LATERAL (
        SELECT lexeme, cardinality(positions) AS tf
        FROM unnest(ts_filter(setweight(c.tsv, 'A', %(lexemes)s::text[]), '{{a}}'))
    ) u
    JOIN kw_terms k ON k.lexeme = u.lexeme
    WHERE c.{generation} AND c.tsv @@ %(match)s::tsquery
    GROUP BY c.id ORDER BY score DESC, c.id LIMIT %(limit)s
),
vec AS (
    SELECT c.id, 1 - ({expr} <=> %(qvec)s::vector({dims})) AS score
    FROM {chunks} c
    WHERE c.{generation} AND c.{vfilter}
    ORDER BY {expr} <=> %(qvec)s::vector({dims}) LIMIT %(limit)s
)
SELECT r.kind, r.score, c.id, c.path, c.start_line, c.end_line, c.text
FROM (SELECT 'k' AS kind, id, score FROM kw UNION ALL SELECT 'v', id, score FROM vec) r
JOIN {chunks} c ON c.id = r.id
UNION ALL SELECT 'g', generation, NULL, NULL, NULL, NULL, NULL
FROM {namespaces} WHERE namespace = %(ns)s"""


def previous_search(conn: Conn, store: Store, terms: QueryTerms | None, qvec: np.ndarray) -> int:
    """The previous hybrid search's statements (first keyword round; it re-ran the keyword
    part with more terms when the rarest ones could not prove the top ``limit``)."""
    conn.execute("")  # the pool's health check, a round trip before every use
    lexemes = list(terms.lexemes) if terms else []
    stats = sql.SQL(_PREV_STATS).format(
        term_stats=store.t("term_stats"),
        namespaces=store.t("namespaces"),
        generations=store.t("generations"),
    )
    row = conn.execute(
        stats, {"ef": str(EF_SEARCH), "lexemes": lexemes, "ns": store.namespace}
    ).fetchone()
    assert row is not None
    _, generation, chunks, tokens, dfs = row
    present = [(t, int(df)) for t, df in zip(lexemes, dfs or [], strict=True) if df]
    half = chunks // 2
    if any(df <= half for _, df in present):
        present = [(t, df) for t, df in present if df <= half]
    present.sort(key=lambda p: (p[1], p[0]))
    if not present:
        return 0
    count, matched = 1, present[0][1]
    while count < len(present) and matched + present[count][1] <= BUDGET:
        matched += present[count][1]
        count += 1
    where = generation_filter(store.namespace, int(generation))
    query = sql.SQL(_PREV).format(
        chunks=store.t("chunks"),
        namespaces=store.t("namespaces"),
        generation=where,
        expr=sql.SQL("c.") + vector_expr(DIMS),
        dims=sql.Literal(DIMS),
        vfilter=vector_filter(MODEL, DIMS),
    )
    params = {
        "lexemes": [t for t, _ in present],
        "idfs": [max(math.log((chunks - df + 0.5) / (df + 0.5)), 1e-6) for _, df in present],
        "match": " | ".join(tsquery_literal(t) for t, _ in present[:count]),
        "avgdl": tokens / chunks,
        "k1": K1,
        "b": B,
        "limit": LIMIT,
        "ns": store.namespace,
        "qvec": qvec,
    }
    return len(conn.execute(query, params).fetchall())


# -- measuring --------------------------------------------------------------------------------


class NewSearch:
    def __init__(self, store: Store) -> None:
        self.store = store
        self.known: Active | None = None

    def __call__(self, conn: Conn, store: Store, terms: QueryTerms | None, qvec: Any) -> int:
        found, self.known = run_search(
            conn,
            store,
            self.known,
            terms=terms,
            query_vector=qvec,
            model=MODEL,
            limit=LIMIT,
            exact_below=20_000,
        )
        return len(found.keyword) + len(found.vector)


def backend_cpu(pids: set[int]) -> dict[int, float]:
    """User + system seconds so far of each server process in ``pids`` (this benchmark's
    connections only: other clients of the server are not counted)."""
    out = {}
    for pid in pids:
        try:
            times = psutil.Process(pid).cpu_times()
        except psutil.NoSuchProcess:
            continue
        out[pid] = times.user + times.system
    return out


PIDS: set[int] = set()
"""The server processes of this benchmark's connections."""

Search = Callable[[Conn, Store, QueryTerms | None, Any], int]


def round_of(
    db: Database,
    store: Store,
    search: Search,
    queries: list[tuple[QueryTerms | None, np.ndarray]],
    clients: int,
    per_client: int,
) -> dict[str, float]:
    latencies: list[float] = []
    lock = threading.Lock()

    def client(offset: int) -> None:
        mine = []
        for i in range(per_client):
            terms, qvec = queries[(offset * per_client + i) % len(queries)]
            t0 = time.perf_counter()
            with db.connection(ef_search=EF_SEARCH) as conn:
                search(conn, store, terms, qvec)
                pid = conn.info.backend_pid
            mine.append((time.perf_counter() - t0) * 1000)
            with lock:
                PIDS.add(pid)
        with lock:
            latencies.extend(mine)

    threads = [threading.Thread(target=client, args=(i,)) for i in range(clients)]
    before = backend_cpu(PIDS)
    started = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = time.perf_counter() - started
    after = backend_cpu(PIDS)
    cpu = sum(v - before.get(pid, 0.0) for pid, v in after.items())
    latencies.sort()
    return {
        "p50": statistics.median(latencies),
        "p95": latencies[math.ceil(0.95 * len(latencies)) - 1],
        "qps": len(latencies) / wall,
        "cpu_ms": cpu * 1000 / len(latencies),
    }


def _first_terms(terms: QueryTerms | None, count: int | None) -> QueryTerms | None:
    """``terms`` cut to their first ``count`` lexemes (all of them without ``count``)."""
    if terms is None or not count:
        return terms
    return QueryTerms(terms.lexemes[:count])


def _load_avg() -> str:
    return " ".join(f"{x:.1f}" for x in os.getloadavg())


def run(args: argparse.Namespace, dsn: str, chunks: int) -> None:
    config = PostgresConfig(
        dsn=dsn,
        pool_max_size=17,
        maintenance_work_mem=args.maintenance_work_mem,
        max_parallel_maintenance_workers=1,
    )
    db = Database(config)
    store = Store(config.schema_name, f"bench46-{chunks}")
    with db.connection() as conn:
        present = store.active(conn)
    stamp = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    print(f"\n# {chunks} chunks, {stamp}")
    print("text: synthetic, SciFact word frequencies; vectors: random unit, 128 dims")
    if present is None or args.rebuild:
        words, probs = vocabulary(args.dataset)
        seconds = load(db, store, chunks, words, probs, previous=not args.no_previous)
        print(f"loaded in {seconds:.0f} s ({chunks / seconds:.0f} chunks/s, load {_load_avg()})")
    if args.load_only:
        db.close()
        return
    rng = np.random.default_rng(23)
    texts = claims(args.dataset)
    queries = [
        (_first_terms(query_terms(t), args.terms), v)
        for t, v in zip(texts, unit_vectors(rng, len(texts)), strict=True)
    ]
    if args.terms:
        print(f"queries: each claim's first {args.terms} search terms (short, agent-style)")
    searches: dict[str, Search] = {"new": NewSearch(store)}
    if not args.no_previous:
        searches["previous"] = previous_search
    for search in searches.values():  # warm both, on every connection of the pool
        round_of(db, store, search, queries, 16, 2)
    print("| clients | statements | p50 ms | p95 ms | queries/s | server CPU ms/search | load |")
    print("|---|---|---|---|---|---|---|")
    for clients in args.clients or [1, 4, 16]:
        rounds: dict[str, list[dict[str, float]]] = {name: [] for name in searches}
        for _ in range(args.rounds):
            for name, search in searches.items():
                rounds[name].append(round_of(db, store, search, queries, clients, args.queries))
        for name, results in rounds.items():
            med = {k: statistics.median(r[k] for r in results) for k in results[0]}
            print(
                f"| {clients} | {name} | {med['p50']:.1f} | {med['p95']:.1f} | {med['qps']:.1f}"
                f" | {med['cpu_ms']:.1f} | {_load_avg()} |",
                flush=True,
            )
    db.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--chunks", type=int, action="append", help="corpus sizes (repeatable)")
    parser.add_argument("--clients", type=int, action="append", help="default 1, 4 and 16")
    parser.add_argument("--dsn", help="an existing server (default: start a disposable one)")
    parser.add_argument("--dataset", type=Path, default=SCIFACT)
    parser.add_argument("--queries", type=int, default=25, help="queries per client per round")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument(
        "--terms", type=int, help="cut each claim to its first N search terms (default: all)"
    )
    parser.add_argument("--rebuild", action="store_true", help="load even if already there")
    parser.add_argument("--load-only", action="store_true", help="load, do not search")
    parser.add_argument("--no-previous", action="store_true", help="the new statement only")
    parser.add_argument("--maintenance-work-mem", default="2GB")
    parser.add_argument(
        "--keep",
        type=Path,
        default=Path("/tmp/memwell-bench-pg"),
        help="the started server's data directory, kept for the next run (loads are reused)",
    )
    parser.add_argument("--shared-buffers", default="2GB", help="the started server's setting")
    args = parser.parse_args()
    logging.basicConfig(format="%(asctime)s %(name)s: %(message)s", datefmt="%H:%M:%S")
    with server_dsn(args.dsn, args.keep, f"shared_buffers={args.shared_buffers}") as dsn:
        for chunks in args.chunks or [100_000]:
            run(args, dsn, chunks)


if __name__ == "__main__":
    main()
