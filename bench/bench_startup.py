"""Start-up benchmark (issue 16): how long a person waits for the ``memwell`` command.

Rows: ``memwell --help``, a keyword-only one-shot search on an indexed 1,000-file workspace
and a hybrid one-shot search (the local MiniLM; the query is embedded with NumPy) on an
indexed workspace of ``--hybrid-files`` files. Each is a fresh process, as a shell user runs
it (``PYTHONDONTWRITEBYTECODE`` is dropped: a user's shell writes bytecode caches); one
warm-up run first fills them and the plugin index. Figures are medians of this run: wall
time, and the CPU time of the process, which a loaded machine inflates far less (the target
is for wall time on an idle machine). ``--keep DIR`` builds the indexed workspaces in DIR
once and reuses them (indexing 1,000 files with the model takes minutes on 2 cores).
``--baseline TREE`` (an exported checkout, e.g. ``git archive main | tar -x -C TREE``) runs
every command alternately with TREE's core and first-party plugins first on ``PYTHONPATH``
and with this checkout's the same way, so both sides see the same load and the same path.
``--imports N`` then lists the N modules that cost the keyword search most to import (self
time, the least of ``--runs`` ``python -X importtime`` runs, so load spikes drop out).

    python bench/bench_startup.py [--files 1000] [--hybrid-files 1000] [--runs 7] [--keep DIR]
        [--baseline TREE] [--imports N]
"""

from __future__ import annotations

import argparse
import os
import resource
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


ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def _cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def tree_env(tree: Path, cache: Path) -> dict[str, str]:
    """The environment that imports memwell and its first-party plugins from ``tree``, with
    its own cache directory: a plugin index shared by two trees would be invalidated by
    every alternation (its records hold the stats of the plugins' files)."""
    roots = [tree / "core", *sorted(p.parent for p in tree.glob("plugins/**/pyproject.toml"))]
    return {
        **ENV,
        "PYTHONPATH": os.pathsep.join(str(r) for r in roots),
        "XDG_CACHE_HOME": str(cache),
    }


def timed(args: list[str], runs: int, envs: list[dict[str, str]]) -> list[tuple[float, float]]:
    """Median (wall, CPU) seconds of ``runs`` fresh processes per environment, alternating
    between them (one warm-up run each first)."""
    for env in envs:
        subprocess.run(args, check=True, capture_output=True, env=env)
    samples: list[list[tuple[float, float]]] = [[] for _ in envs]
    for _ in range(runs):
        for env, found in zip(envs, samples, strict=True):
            cpu, start = _cpu_seconds(), time.perf_counter()
            subprocess.run(args, check=True, capture_output=True, env=env)
            found.append((time.perf_counter() - start, _cpu_seconds() - cpu))
    return [
        (statistics.median(w for w, _ in found), statistics.median(c for _, c in found))
        for found in samples
    ]


def import_costs(args: list[str], runs: int, env: dict[str, str]) -> list[tuple[str, float, float]]:
    """``(module, self ms, cumulative ms)`` of every module ``args`` imports in ``env``, each
    the least over ``runs`` runs of ``python -X importtime``, most expensive first."""
    least: dict[str, tuple[float, float]] = {}
    for _ in range(runs):
        report = subprocess.run(
            [args[0], "-X", "importtime", *args[1:]], capture_output=True, text=True, env=env
        ).stderr
        for line in report.splitlines():
            fields = line.removeprefix("import time:").split("|")
            if not line.startswith("import time:") or not fields[0].strip().isdigit():
                continue
            name, own, total = fields[2].strip(), int(fields[0]) / 1e3, int(fields[1]) / 1e3
            seen = least.get(name, (own, total))
            least[name] = (min(seen[0], own), min(seen[1], total))
    return sorted(((n, o, t) for n, (o, t) in least.items()), key=lambda row: -row[1])


def indexed(root: Path, name: str, files: int, provider: str) -> Path:
    """A generated workspace of ``files`` files, indexed with ``provider`` (reused if built)."""
    ws = root / f"{name}-{files}"
    if not (ws / ".built").exists():
        shutil.rmtree(ws, ignore_errors=True)
        generate(ws, files)
        subprocess.run([*MEMWELL, "--provider", provider, "-w", str(ws), "index"], check=True)
        (ws / ".built").write_text("")
    return ws


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=1000)
    parser.add_argument("--hybrid-files", type=int, default=1000)
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--keep", type=Path, help="Build (once) and reuse workspaces here.")
    parser.add_argument("--baseline", type=Path, help="A checkout to compare with, same run.")
    parser.add_argument("--imports", type=int, default=0, help="List the N costliest imports.")
    args = parser.parse_args()
    ENV.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    root = args.keep or Path(tempfile.mkdtemp(prefix="memwell-startup-"))
    # With a baseline, this checkout runs from PYTHONPATH too: both sides search the same
    # number of directories for every import.
    envs = (
        [ENV]
        if args.baseline is None
        else [
            tree_env(args.baseline, root / "cache-baseline"),
            tree_env(Path(__file__).resolve().parents[1], root / "cache-this"),
        ]
    )
    started = time.strftime("%Y-%m-%d %H:%M")
    load_before = os.getloadavg()
    try:
        keyword_ws = indexed(root, "keyword", args.files, "none")
        hybrid_ws = indexed(root, "hybrid", args.hybrid_files, "local")
        keyword_search = [*MEMWELL, "--provider", "none", "-w", str(keyword_ws), "search", QUERY]
        rows = {
            "--help": timed([*MEMWELL, "--help"], args.runs, envs),
            "keyword one-shot search": timed(keyword_search, args.runs, envs),
            "hybrid one-shot search": timed(
                [*MEMWELL, "--provider", "local", "-w", str(hybrid_ws), "search", QUERY],
                args.runs,
                envs,
            ),
        }
        python_alone = timed([sys.executable, "-c", "pass"], args.runs, [ENV])[0]
        imports = (
            import_costs(keyword_search, args.runs, envs[-1])[: args.imports]
            if args.imports
            else []
        )
    finally:
        if args.keep is None:
            shutil.rmtree(root, ignore_errors=True)
    load = os.getloadavg()
    print(
        f"\nmemwell start-up, {started}, {os.cpu_count()} cores, keyword {args.files} files, "
        f"hybrid {args.hybrid_files} files, median of {args.runs} runs, load average "
        f"{load_before[0]:.1f} at start, {load[0]:.1f} at end"
    )
    base = " | baseline wall (s) | baseline CPU (s)" if args.baseline else ""
    print(f"| command{base} | median wall (s) | median CPU (s) | target (s) | met (wall) |")
    print("|---" * (6 if args.baseline else 4) + "|---|")
    for name, found in rows.items():
        seconds, cpu = found[-1]
        before = "".join(f" | {w:.3f} | {c:.3f}" for w, c in found[:-1])
        met = "yes" if seconds < TARGETS[name] else "no"
        print(f"| {name}{before} | {seconds:.3f} | {cpu:.3f} | < {TARGETS[name]} | {met} |")
    print(f"| (python -c pass, for scale) | {python_alone[0]:.3f} | {python_alone[1]:.3f} | | |")
    if imports:
        print("\nkeyword search imports (least of the runs, ms)\n| module | self | cumulative |")
        print("|---|---|---|")
        for name, own, total in imports:
            print(f"| {name} | {own:.1f} | {total:.1f} |")


if __name__ == "__main__":
    main()
