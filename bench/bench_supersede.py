"""Supersession precision and recall on labelled pairs (``bench/data/supersede_pairs.tsv``).

    python bench/bench_supersede.py [--verbose]

Each row is an older line, a newer line and a label: 1 when the newer line states a new value
for the same subject and attribute (ports, owners, dates, times, weekdays, counts,
preferences), 0 for look-alikes about different subjects, restatements, history and negations.
A pair counts as predicted when :func:`memwell.writing.facts.superseding_pairs` finds one;
this is the matching every write channel runs, without an LLM.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from memwell.writing.facts import superseding_pairs

PAIRS = Path(__file__).resolve().parent / "data" / "supersede_pairs.tsv"


def load() -> list[tuple[int, str, str, str]]:
    """``(label, kind, old line, new line)`` of every pair."""
    rows = []
    for line in PAIRS.read_text(encoding="utf-8").splitlines():
        if line.strip() and not line.startswith("#"):
            label, kind, old, new = line.split("\t")
            rows.append((int(label), kind, old, new))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--verbose", action="store_true", help="print every miss")
    args = parser.parse_args()
    rows = load()
    tp = fp = fn = tn = 0
    for label, kind, old, new in rows:
        predicted = bool(superseding_pairs(new, old))
        tp += predicted and label == 1
        fp += predicted and label == 0
        fn += not predicted and label == 1
        tn += not predicted and label == 0
        if args.verbose and predicted != bool(label):
            print(f"{'FP' if predicted else 'FN'} [{kind}] {old!r} -> {new!r}")
    precision = tp / (tp + fp) if tp + fp else 1.0
    recall = tp / (tp + fn) if tp + fn else 1.0
    positives = sum(label for label, *_ in rows)
    print(f"pairs {len(rows)} ({positives} updates, {len(rows) - positives} look-alikes)")
    print(f"precision {precision:.3f}  recall {recall:.3f}  (tp {tp}, fp {fp}, fn {fn}, tn {tn})")


if __name__ == "__main__":
    main()
