"""Warm search latency of configuration variants on one built index, interleaved.

    python bench/bench_warm_search.py --workdir DIR --queries QUERIES \
        [--variant NAME=CONFIG.toml ...] [--queries-limit 150] [--rounds 3]

DIR is a workspace indexed already (``memwell eval --workdir DIR`` builds one); QUERIES is a
BEIR ``queries.jsonl`` (its ``text`` fields) or a text file with one question per line. The
variant ``default`` (no config file) is always measured; each ``--variant`` adds the
settings of a ``memwell.toml``-style file on top. Every variant opens the same index (sync and
the recall cache off) and answers each question once per round, variants interleaved
question by question (and each going first in turn, so that none gains from a cache another
one filled) so that the machine's load falls on all of them alike. Each search is
what an agent asks: the configured ``max_results`` and score floor. Prints p50 / p95 per
variant and their ratio to the default; on a shared machine read the ratios.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

from memwell.contract.config import load_settings
from memwell.contract.manager import MemorySearchManager
from memwell.registry.plugins import get_registry
from memwell.runtime.factory import close_all, open_memory

QUIET: dict[str, Any] = {
    "sync": {"watch": False, "on_search": False},
    "cache": {"recall": {"enabled": False}},
}


def read_queries(path: Path, limit: int) -> list[str]:
    """Question texts from a BEIR ``queries.jsonl`` or a plain one-per-line file."""
    texts: list[str] = []
    for line in path.read_text(encoding="utf-8").splitlines():
        line = line.strip()
        if not line:
            continue
        texts.append(json.loads(line)["text"] if line.startswith("{") else line)
        if len(texts) == limit:
            break
    return texts


def open_variant(workdir: Path, config: Path | None) -> MemorySearchManager:
    """The workspace's manager with ``config`` (or the defaults) and syncing off."""
    settings = load_settings(
        workdir, config_file=config, overrides=QUIET, registry=get_registry(), user_config=None
    )
    return open_memory(workdir, settings=settings)


def percentile(samples: list[float], share: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(len(ordered) * share))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--workdir", type=Path, required=True)
    parser.add_argument("--queries", type=Path, required=True)
    parser.add_argument("--variant", action="append", default=[], metavar="NAME=CONFIG")
    parser.add_argument("--queries-limit", type=int, default=150)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    variants: dict[str, Path | None] = {"default": None}
    for spec in args.variant:
        name, _, config = spec.partition("=")
        if not config:
            parser.error(f"--variant {spec!r}: expected NAME=CONFIG")
        variants[name] = Path(config)
    queries = read_queries(args.queries, args.queries_limit)
    managers = {name: open_variant(args.workdir, cfg) for name, cfg in variants.items()}
    chunks = managers["default"].status().chunks
    for manager in managers.values():
        manager.search(queries[0])  # load the index, the model and the matrix once
    timings: dict[str, list[float]] = {name: [] for name in managers}
    load_before = os.getloadavg()[0]
    names = list(managers)
    for _ in range(args.rounds):
        for k, query in enumerate(queries):
            for name in names[k % len(names) :] + names[: k % len(names)]:
                manager = managers[name]
                started = time.perf_counter()
                manager.search(query)
                timings[name].append((time.perf_counter() - started) * 1000)
    load_after = os.getloadavg()[0]
    close_all()
    base = statistics.median(timings["default"])
    print(
        f"warm search, {args.workdir} ({chunks} chunks), {len(queries)} questions x "
        f"{args.rounds} rounds, {os.cpu_count()} cores, load {load_before:.1f} -> "
        f"{load_after:.1f}, {time.strftime('%Y-%m-%d %H:%M')}"
    )
    print("| variant | p50 (ms) | p95 (ms) | p50 / default |")
    print("|---|---|---|---|")
    for name, samples in timings.items():
        p50 = statistics.median(samples)
        print(
            f"| {name} | {p50:.2f} | {percentile(samples, 0.95):.2f} | {p50 / base:.2f}x |",
            flush=True,
        )
    sys.stdout.flush()


if __name__ == "__main__":
    main()
