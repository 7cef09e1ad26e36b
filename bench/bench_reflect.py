"""The Reflection Engine's cost: ``memwell reflect`` on 1,000 and 10,000 generated notes.

    python bench/bench_reflect.py [--notes 1000 10000] [--repeats 3]

Each size runs in a fresh child process: generate dated notes that name people, projects,
systems and places and hold how-tos, index them (keyword-only builtin backend), then time
reflect's first run (every page written and indexed) and its later runs on unchanged memory
(nothing written), and read the child's peak RSS above its size before the first run. Times
are wall clock with the process's CPU time in brackets (the CPU time is what a loaded, shared
machine distorts least); later runs are medians of ``--repeats``, the first run is measured
once. Note the machine load beside the figures.
"""

from __future__ import annotations

import argparse
import json
import random
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import date, timedelta
from pathlib import Path

PEOPLE = [
    f"{first} {last}"
    for first in (
        "Ines",
        "Kiran",
        "Noor",
        "Mateo",
        "Aiko",
        "Lena",
        "Tomas",
        "Farid",
        "Mirela",
        "Joao",
    )
    for last in (
        "Duarte",
        "Okafor",
        "Lindqvist",
        "Moreau",
        "Tanaka",
        "Silva",
        "Novak",
        "Haddad",
        "Keller",
        "Brennan",
    )
]
PROJECTS = [
    f"Project {name}"
    for name in (
        "Atlas",
        "Borealis",
        "Cobalt",
        "Delta",
        "Ember",
        "Falcon",
        "Granite",
        "Harbor",
        "Iris",
        "Juniper",
    )
]
SYSTEMS = ["PostgreSQL", "Kafka", "Redis", "GitHub", "Grafana", "Terraform", "Kubernetes", "S3"]
PLACES = ["Lisbon", "Porto", "Berlin", "Nairobi", "Osaka", "Toronto", "Madrid", "Oslo"]
VERBS = ["works on", "leads", "uses", "asked about", "reviewed"]


def note_text(i: int, rng: random.Random) -> str:
    lines = [f"# Day {i}", ""]
    for _ in range(rng.randint(4, 8)):
        person, other = rng.sample(PEOPLE, 2)
        target = rng.choice(PROJECTS + SYSTEMS)
        lines.append(f"- Met with {person} today; {person} {rng.choice(VERBS)} {target}.")
        lines.append(f"- {other} moved to {rng.choice(PLACES)} and prefers {rng.choice(SYSTEMS)}.")
    if i % 20 == 0:
        lines += ["", f"## How to restart worker {i % 400}", ""]
        lines += [f"{n}. Step {n} of the restart of worker {i % 400}." for n in range(1, 5)]
    return "\n".join(lines) + "\n"


def one(count: int, repeats: int) -> dict[str, float]:
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from bench_builtin import registry
    from memwell.contract.config import MemwellSettings
    from memwell.organise import reflect
    from memwell.runtime.factory import close_all, open_memory
    from memwell.writing import MemoryWriter

    rng = random.Random(42)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        (root / "memory").mkdir()
        start_day = date(2020, 1, 1)
        for i in range(count):
            day = start_day + timedelta(days=i // 3)
            (root / f"memory/{day}-n{i % 3}.md").write_text(note_text(i, rng))
        settings = MemwellSettings.model_validate(
            {"provider": "none", "sync": {"watch": False, "on_search": False}}
        )
        memory = open_memory(root, settings=settings, registry=registry())
        memory.sync(reason="bench")
        writer = MemoryWriter(memory, root, settings)
        base_rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        started, cpu = time.perf_counter(), time.process_time()
        first = reflect(writer)
        first_s, first_cpu = time.perf_counter() - started, time.process_time() - cpu
        peak_rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        again: list[float] = []
        again_cpu: list[float] = []
        for _ in range(repeats):
            started, cpu = time.perf_counter(), time.process_time()
            later = reflect(writer)
            again.append(time.perf_counter() - started)
            again_cpu.append(time.process_time() - cpu)
            assert not later.changed_anything, "a second run changed memory"
        close_all()
    return {
        "notes": count,
        "entities": first.entities,
        "procedures": first.procedures,
        "pages_written": len(first.added),
        "first_run_s": round(first_s, 2),
        "first_run_cpu_s": round(first_cpu, 2),
        "unchanged_run_s": round(statistics.median(again), 2),
        "unchanged_run_cpu_s": round(statistics.median(again_cpu), 2),
        "peak_rss_mb_above_start": round((peak_rss - base_rss) / 1024, 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--notes", type=int, nargs="+", default=[1000, 10000])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--one", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        print(json.dumps(one(args.one, args.repeats)))
        return
    print(
        "notes  entities  procedures  pages  first run (CPU)     unchanged run (CPU)  "
        "peak RSS above start"
    )
    for count in args.notes:
        command = [sys.executable, __file__, "--one", str(count), "--repeats", str(args.repeats)]
        done = subprocess.run(command, capture_output=True, text=True, check=True)
        row = json.loads(done.stdout.strip().splitlines()[-1])
        print(
            f"{row['notes']:>5}  {row['entities']:>8}  {row['procedures']:>10}  "
            f"{row['pages_written']:>5}  "
            f"{row['first_run_s']:>7.2f}s ({row['first_run_cpu_s']:.2f}s)  "
            f"{row['unchanged_run_s']:>9.2f}s ({row['unchanged_run_cpu_s']:.2f}s)  "
            f"{row['peak_rss_mb_above_start']:>10.1f} MB"
        )


if __name__ == "__main__":
    main()
