"""The default score floor as a classifier on the demo workspace (issue 21).

    python bench/bench_floor.py [--workspace examples/demo] [--json]

Copies the workspace to a temporary directory, indexes it with the configured provider (the
local all-MiniLM-L6-v2 by default) and asks two fixed sets of questions with the default
``min_score`` and ``max_results``: questions whose answer is in one file (kept when that file
is among the hits), and questions about things the workspace never mentions (right when
nothing comes back). Prints both fractions, the scores of every question and the
calibration the index stored. SciFact and LoCoMo give the same figures through
``memwell eval`` (``floor_kept``, ``floor_empty``).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import tempfile
from pathlib import Path

from memwell.factory import close_all, open_memory
from memwell.recall.manager import unwrap

ANSWERED = {
    "what did we decide about the release?": "memory/2026-11-20.md",
    "when is the next release going live?": "memory/2026-11-20.md",
    "who fixes the cookie problem": "memory/2026-11-20.md",
    "why did the nightly ETL job fail": "memory/2026-11-24.md",
    "which port does the staging database use": "MEMORY.md",
    "how long are backups kept": "MEMORY.md",
    "how often does the fig tree need water": "memory/projects.md",
    "what is the goal of the checkout redesign": "memory/projects.md",
    "who leads the payments team": "MEMORY.md",
    "how many approvals does a code review need": "MEMORY.md",
}
UNRELATED = (
    "how do I bake sourdough bread",
    "what is the capital of Peru",
    "best pizza topping",
    "which books am I reading",
    "when is my dentist appointment",
    "what did the vet say about the cat",
    "how tall is Mount Everest",
    "recommend a good science fiction film",
    "what are the rules of cricket",
    "where did I park the car",
)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--workspace", type=Path, default=Path("examples/demo"))
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    with tempfile.TemporaryDirectory() as tmp:
        workspace = Path(tmp) / "ws"
        shutil.copytree(args.workspace, workspace, ignore=shutil.ignore_patterns(".memwell"))
        memory = open_memory(
            workspace,
            overrides={"sync": {"watch": False}, "cache": {"recall": {"enabled": False}}},
        )
        memory.sync()
        rows = []
        for query, expected in ANSWERED.items():
            hits = memory.search(query)
            rows.append({"query": query, "kept": expected in {h.path for h in hits},
                         "scores": [round(h.score, 3) for h in hits]})  # fmt: skip
        for query in UNRELATED:
            hits = memory.search(query)
            best = memory.search(query, min_score=0.0, max_results=1)
            top = round(best[0].score, 3) if best else None
            rows.append({"query": query, "empty": not hits, "best_score": top})
        status = memory.status()
        meta = getattr(unwrap(memory), "files", None)
        calibration = (getattr(meta, "reader_meta", None) or {}).get("calibration_params")
        close_all()
    kept = sum(1 for r in rows if r.get("kept")) / len(ANSWERED)
    empty = sum(1 for r in rows if r.get("empty")) / len(UNRELATED)
    report = {"provider": status.provider, "model": status.model, "calibration": calibration,
              "answered_kept": kept, "unrelated_empty": empty, "rows": rows}  # fmt: skip
    if args.json:
        print(json.dumps(report))
        return
    print(f"{status.provider} {status.model}, calibration {calibration}")
    for row in rows:
        print(f"  {row['query']:<46} {json.dumps({k: v for k, v in row.items() if k != 'query'})}")
    print(f"answered questions kept by the default floor: {kept:.2f} ({len(ANSWERED)})")
    print(f"unrelated questions with no hit:              {empty:.2f} ({len(UNRELATED)})")


if __name__ == "__main__":
    main()
