"""The default score floor as a classifier on two workspaces (issues 21 and 43).

    python bench/bench_floor.py [--set demo|one-word|both] [--config FILE] [--json]

For each set, copies its workspace to a temporary directory, indexes it with the configured
provider (the local all-MiniLM-L6-v2 by default) and asks two fixed sets of questions with
the default ``min_score`` and ``max_results``: questions whose answer is in one file (kept
when that file is among the hits), and unrelated questions (right when nothing comes back).

- ``demo``: ``examples/demo`` and the questions below (the unrelated ones mostly share no
  word with it);
- ``one-word``: ``tests/data/floor_check``, a workspace of five notes, and its
  ``questions.json``: 71 unrelated questions that each share exactly one content word (by
  index stem) with a note, the hard case of issue 43, and 12 answered ones.

``--config FILE`` opens each copy with that memwell.toml on top (another backend, say
``backend = "postgres"`` with its ``dsn``; or ``[query.hybrid] enabled = false`` for
vector-only search).

Prints both fractions, the scores of every question and the calibration the index stored.
SciFact and LoCoMo give the same figures through ``memwell eval`` (``floor_kept``,
``floor_dropped``, ``floor_empty``).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import tempfile
from pathlib import Path

from memwell.runtime.factory import close_all, open_memory
from memwell.runtime.fallback import unwrap

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


ROOT = Path(__file__).resolve().parents[1]
ONE_WORD = ROOT / "tests" / "data" / "floor_check"


def question_sets(name: str) -> dict[str, tuple[Path, dict[str, str], tuple[str, ...]]]:
    """The sets ``name`` selects: workspace, answered questions, unrelated questions."""
    sets = {}
    if name in ("demo", "both"):
        sets["demo"] = (ROOT / "examples" / "demo", ANSWERED, UNRELATED)
    if name in ("one-word", "both"):
        data = json.loads((ONE_WORD / "questions.json").read_text(encoding="utf-8"))
        sets["one-word"] = (ONE_WORD, data["answered"], tuple(data["unrelated"]))
    return sets


def measure(
    source: Path,
    answered: dict[str, str],
    unrelated: tuple[str, ...],
    config: Path | None = None,
) -> dict[str, object]:
    """Index a copy of ``source`` and ask both question sets under the default floor."""
    with tempfile.TemporaryDirectory() as tmp:
        workspace = Path(tmp) / "ws"
        shutil.copytree(source, workspace, ignore=shutil.ignore_patterns(".memwell"))
        memory = open_memory(
            workspace,
            overrides={"sync": {"watch": False}, "cache": {"recall": {"enabled": False}}},
            config_file=config,
        )
        memory.sync()
        rows = []
        for query, expected in answered.items():
            hits = memory.search(query)
            rows.append({"query": query, "kept": expected in {h.path for h in hits},
                         "scores": [round(h.score, 3) for h in hits]})  # fmt: skip
        for query in unrelated:
            hits = memory.search(query)
            best = memory.search(query, min_score=0.0, max_results=1)
            top = round(best[0].score, 3) if best else None
            rows.append({"query": query, "empty": not hits, "best_score": top})
        status = memory.status()
        meta = getattr(unwrap(memory), "files", None)
        calibration = (getattr(meta, "reader_meta", None) or {}).get("calibration_params")
        close_all()
    kept = sum(1 for r in rows if r.get("kept")) / len(answered)
    empty = sum(1 for r in rows if r.get("empty")) / len(unrelated)
    return {"backend": status.backend, "provider": status.provider, "model": status.model,
            "calibration": calibration,
            "answered": len(answered), "answered_kept": kept,
            "unrelated": len(unrelated), "unrelated_empty": empty, "rows": rows}  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--set", choices=("demo", "one-word", "both"), default="both")
    parser.add_argument("--config", type=Path, help="a memwell.toml applied to each copy")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    sets = question_sets(args.set)
    reports = {name: measure(*spec, config=args.config) for name, spec in sets.items()}
    if args.json:
        print(json.dumps(reports))
        return
    for name, report in reports.items():
        print(f"[{name}] {report['backend']}, {report['provider']} {report['model']}, "
              f"calibration {report['calibration']}")  # fmt: skip
        for row in report["rows"]:  # type: ignore[attr-defined]
            fields = {k: v for k, v in row.items() if k != "query"}
            print(f"  {row['query']:<60} {json.dumps(fields)}")
        print(f"answered questions kept by the default floor: {report['answered_kept']:.2f} "
              f"({report['answered']})")  # fmt: skip
        print(f"unrelated questions with no hit:              {report['unrelated_empty']:.2f} "
              f"({report['unrelated']})")  # fmt: skip


if __name__ == "__main__":
    main()
