"""Latency of a 1 MB query on the builtin backend, direct and through the ``memory_search`` tool.

    python bench/bench_query_limit.py [--repeats 5]

The query is cut to ``query.max_chars`` before any work; this prints how long the whole call
takes (medians of this run, keyword-only and with the 384-d hashing provider). The target is
under 1 s; note the machine load beside the figures.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_builtin import registry
from corpus import generate
from memwell.agent.tools import execute_tool
from memwell.contract.config import MemwellSettings
from memwell.runtime.factory import close_all, open_memory


def one_mb_query() -> str:
    rng = random.Random(11)
    words = " ".join(f"topic{rng.randrange(30)} word{rng.randrange(200)}" for _ in range(70_000))
    return words[:1_000_000]


def measure(provider: str, repeats: int) -> tuple[float, float]:
    """Median seconds of a direct search and of the tool call with a 1 MB query."""
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        generate(root, 100)
        settings = MemwellSettings.model_validate(
            {"provider": provider, "sync": {"watch": False, "on_search": False}}
        )
        memory = open_memory(root, settings=settings, registry=registry())
        memory.sync(reason="bench")
        memory.search("warm up")
        query = one_mb_query()
        direct: list[float] = []
        tool: list[float] = []
        for i in range(repeats):
            varied = f"r{i} {query}"[:1_000_000]  # a new text each time: no recall-cache hit
            started = time.perf_counter()
            memory.search(varied)
            direct.append(time.perf_counter() - started)
            started = time.perf_counter()
            execute_tool("memory_search", {"query": f"t{i} {query}"[:1_000_000]}, memory)
            tool.append(time.perf_counter() - started)
        close_all()
        return statistics.median(direct), statistics.median(tool)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    print(f"load average {os.getloadavg()[0]:.2f}")
    print("| provider | direct search | memory_search tool |")
    print("|---|---|---|")
    for provider in ("none", "hash"):
        direct, tool = measure(provider, args.repeats)
        print(f"| {provider} | {direct * 1000:.0f} ms | {tool * 1000:.0f} ms |")


if __name__ == "__main__":
    main()
