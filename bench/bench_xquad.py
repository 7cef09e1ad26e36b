"""XQuAD zh/en with the default model (all-MiniLM-L6-v2) against e5 (issue 41).

    python bench/bench_xquad.py [--data ../shared/data/xquad-zh-en] [--providers local,e5]
                                [--workdir DIR] [--json]

Runs ``memwell eval`` for every direction (zh -> zh, en -> en, and cross-lingual en -> zh,
zh -> en: the questions of one language asked of the other's paragraphs, matched by id with
``--queries``), keyword-only once and vector-only and hybrid per provider, and prints nDCG@10,
the score floor's ``floor_kept`` (the share of answers the default floor keeps) and
``floor_dropped`` (the share of the other paragraphs among the first 6 hits it drops), the index
time with chunks per second, and the search p50. Indexes are kept under ``--workdir``
(default: a folder in the system's temp dir), so a re-run only searches.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

DIRECTIONS = (("zh", "zh"), ("en", "en"), ("en", "zh"), ("zh", "en"))
"""(question language, paragraph language)."""


def run_eval(data: Path, asked: str, corpus: str, mode: str, provider: str, workdir: Path) -> Any:
    command = [sys.executable, "-m", "memwell", "--provider", provider, "eval"]
    command += ["--dataset", str(data / corpus), "--queries", str(data / asked / "queries.jsonl")]
    command += ["--mode", mode, "--workdir", str(workdir / f"{provider}-{corpus}"), "--json"]
    done = subprocess.run(command, capture_output=True, text=True, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=Path("../shared/data/xquad-zh-en"))
    parser.add_argument("--providers", default="local,e5")
    parser.add_argument("--workdir", type=Path)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    workdir = args.workdir or Path(tempfile.gettempdir()) / "memwell-bench-xquad"
    runs = [("keyword", "none")]
    runs += [(mode, p) for p in args.providers.split(",") for mode in ("hybrid", "vector")]
    rows = []
    built: set[tuple[str, str]] = set()  # the first run on an index builds it; others reuse it
    for asked, corpus in DIRECTIONS:
        for mode, provider in runs:
            report = run_eval(args.data, asked, corpus, mode, provider, workdir)
            fresh = (provider, corpus) not in built and report["index_seconds"] > 0.5
            built.add((provider, corpus))
            rows.append({"direction": f"{asked} -> {corpus}", "built": fresh, **report})
    if args.json:
        print(json.dumps(rows))
        return
    print(
        "| direction | mode | provider | nDCG@10 | R@10 | floor kept | dropped | index | p50 ms |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    for row in rows:
        seconds = row["index_seconds"]
        index = f"{seconds:.1f} s ({row['chunks'] / seconds:.1f})" if row["built"] else "reused"
        print(
            f"| {row['direction']} | {row['mode']} | {row['provider']} | {row['ndcg_at_10']:.3f}"
            f" | {row['recall_at_10']:.3f} | {row['floor_kept']:.3f}"
            f" | {row['floor_dropped']:.3f} | {index}"
            f" | {row['search_ms_p50']} |"
        )


if __name__ == "__main__":
    main()
