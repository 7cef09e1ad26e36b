"""Write latency on the builtin backend: one ``MemoryWriter.append`` (redaction, lock, atomic
replace, fsyncs and the index sync that makes the note searchable) at several workspace sizes.

    python bench/bench_write.py [--files 100 1000] [--appends 30] [--facts]

With ``--facts`` each note states a value (a port), so every append also runs the supersession
lookup (a search and a scan of the files it finds) and marks the previous note's line.

Vectors come from the 384-d hashing provider, so the figures measure memwell, not a model.
Each figure is the median (and p90) of this run's appends; note the machine load beside it.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_builtin import registry
from corpus import generate
from memwell.contract.config import MemwellSettings
from memwell.runtime.factory import close_all, open_memory
from memwell.writing import MemoryWriter


def measure(files: int, appends: int, facts: bool = False) -> tuple[float, float, float]:
    """Median and p90 append latency (ms), and the median search right after (ms)."""
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        generate(root, files)
        settings = MemwellSettings.model_validate(
            {"provider": "hash", "sync": {"watch": False, "on_search": False}}
        )
        memory = open_memory(root, settings=settings, registry=registry())
        memory.sync(reason="bench")
        writer = MemoryWriter(memory, root, settings)
        writes: list[float] = []
        searches: list[float] = []
        for i in range(appends):
            start = time.perf_counter()
            if facts:
                writer.append(f"The zebrafish{i} service listens on port {8000 + i}.")
            else:
                writer.append(f"Decision {i}: the zebrafish{i} rollout waits for QA.")
            writes.append((time.perf_counter() - start) * 1000)
            start = time.perf_counter()
            hits = memory.search(f"zebrafish{i}", min_score=0.0)
            searches.append((time.perf_counter() - start) * 1000)
            assert hits and hits[0].path == writer.daily_path(), f"note {i} not found"
        close_all()
    writes.sort()
    return (
        statistics.median(writes),
        writes[int(0.9 * (len(writes) - 1))],
        statistics.median(searches),
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, nargs="+", default=[100, 1000])
    parser.add_argument("--appends", type=int, default=30)
    parser.add_argument("--facts", action="store_true", help="notes that state a value")
    args = parser.parse_args()
    print(f"load average: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print("| files | append p50 (ms) | append p90 (ms) | search after it, p50 (ms) |")
    print("|---:|---:|---:|---:|")
    for files in args.files:
        p50, p90, search = measure(files, args.appends, args.facts)
        print(f"| {files:,} | {p50:.1f} | {p90:.1f} | {search:.1f} |", flush=True)


if __name__ == "__main__":
    main()
