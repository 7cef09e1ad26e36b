"""Start-up benchmark (issue 16): how long a person waits for the ``memwell`` command.

Rows: ``memwell --help``, a keyword-only one-shot search on an indexed 1,000-file workspace
and a hybrid one-shot search (the local MiniLM; the query is embedded with NumPy) on an
indexed workspace of ``--hybrid-files`` files. Each is a fresh process, as a shell user runs
it; the figure is the median wall time of this run.

    python bench/bench_startup.py [--files 1000] [--hybrid-files 1000] [--runs 7]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from corpus import generate

MEMWELL = [sys.executable, "-m", "memwell"]
QUERY = "which port does the amber service listen on"
TARGETS = {"--help": 0.25, "keyword one-shot search": 0.3, "hybrid one-shot search": 0.5}


def wall(args: list[str], runs: int) -> float:
    """Median wall seconds of ``runs`` fresh processes (one warm-up run first)."""
    subprocess.run(args, check=True, capture_output=True)
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run(args, check=True, capture_output=True)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=1000)
    parser.add_argument("--hybrid-files", type=int, default=1000)
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    root = Path(tempfile.mkdtemp(prefix="memwell-startup-"))
    try:
        keyword_ws, hybrid_ws = root / "keyword", root / "hybrid"
        generate(keyword_ws, args.files)
        generate(hybrid_ws, args.hybrid_files)
        subprocess.run([*MEMWELL, "--provider", "none", "-w", str(keyword_ws), "index"], check=True)
        subprocess.run([*MEMWELL, "--provider", "local", "-w", str(hybrid_ws), "index"], check=True)
        rows = {
            "--help": wall([*MEMWELL, "--help"], args.runs),
            "keyword one-shot search": wall(
                [*MEMWELL, "--provider", "none", "-w", str(keyword_ws), "search", QUERY], args.runs
            ),
            "hybrid one-shot search": wall(
                [*MEMWELL, "--provider", "local", "-w", str(hybrid_ws), "search", QUERY], args.runs
            ),
        }
        python_alone = wall([sys.executable, "-c", "pass"], args.runs)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    load = os.getloadavg()
    print(
        f"\nkeyword {args.files} files, hybrid {args.hybrid_files} files, median of {args.runs}"
        f" runs, load {load[0]:.1f} {load[1]:.1f}"
    )
    print("| command | median wall (s) | target (s) | met |")
    print("|---|---|---|---|")
    for name, seconds in rows.items():
        target = TARGETS[name]
        print(f"| {name} | {seconds:.3f} | < {target} | {'yes' if seconds < target else 'no'} |")
    print(f"| (python -c pass, for scale) | {python_alone:.3f} | | |")


if __name__ == "__main__":
    main()
