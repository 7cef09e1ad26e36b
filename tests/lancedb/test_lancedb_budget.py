"""The injection budget bounds LanceDB's auto-recall block (``query.max_injected_chars``)."""

from __future__ import annotations

from pathlib import Path

from lancedb_helpers import Build
from memwell.agent.lifecycle import before_answer
from memwell.registry.plugins import PluginRegistry


def test_auto_recall_block_fits_the_budget(
    build: Build, workspace: Path, registry: PluginRegistry
) -> None:
    texts = [f"Seat preference number {i}: I prefer window seats row {i}" for i in range(3)]
    roomy = build(workspace)
    for text in texts:
        roomy.memories.store(text, category="preference")
    full = before_answer(roomy, "I prefer window seats", registry=registry).splitlines()
    items = [line for line in full if line[:1].isdigit()]
    assert len(items) == 3 and not any("truncated" in line for line in full)
    first = items[0].split(". ", 1)[1]
    budget = len(first) + 20
    tight = build(workspace, query={"max_injected_chars": max(100, budget)})
    lines = before_answer(tight, "I prefer window seats", registry=registry).splitlines()
    shown = [line.split(". ", 1)[1] for line in lines if line[:1].isdigit()]
    assert lines[0] == "<relevant-memories>" and lines[-1] == "</relevant-memories>"
    assert shown[0] == first  # the best memory whole
    assert len(shown) == 2 and items[1].split(". ", 1)[1].startswith(shown[1])
    assert sum(map(len, shown)) <= max(100, budget)
    assert lines[-2].startswith("[memories truncated to ")
