"""``memwell eval``: retrieval quality on a BEIR-layout dataset."""

from __future__ import annotations

import hashlib
import json
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import click

from ..evaluation import evaluate, load_dataset, write_corpus
from ..factory import open_memory
from .main import Context, cli, pass_ctx

MODES: dict[str, dict[str, Any]] = {
    "keyword": {"provider": "none"},
    "vector": {"query": {"hybrid": {"enabled": False}}},
    "hybrid": {},
}


def _default_workdir(dataset: Path, family: str) -> Path:
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "memwell" / "eval"
    tag = hashlib.sha1(str(dataset.resolve()).encode()).hexdigest()[:10]
    return base / f"{dataset.name}-{tag}" / family


@cli.command(name="eval")
@click.option(
    "--dataset",
    "dataset_dir",
    required=True,
    type=click.Path(exists=True, file_okay=False, path_type=Path),
    help="BEIR-layout directory (corpus.jsonl[.gz], queries.jsonl, qrels/<split>.tsv).",
)
@click.option("--split", default="test", show_default=True, help="Judgment split.")
@click.option("--mode", type=click.Choice(list(MODES)), default="hybrid", show_default=True)
@click.option(
    "--workdir",
    type=click.Path(file_okay=False, path_type=Path),
    help="Workspace to build (kept, so re-runs reuse the index and the embedding cache).",
)
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
@pass_ctx
def eval_command(
    ctx: Context, dataset_dir: Path, split: str, mode: str, workdir: Path | None, as_json: bool
) -> None:
    """Index a dataset as Markdown memory and report nDCG@10, Recall@10/100, MRR@10."""
    dataset = load_dataset(dataset_dir, split)
    family = "keyword" if mode == "keyword" else "embedding"
    workspace = workdir or _default_workdir(dataset_dir, family)
    workspace.mkdir(parents=True, exist_ok=True)
    path_to_doc = write_corpus(dataset, workspace / "memory")
    overrides: dict[str, Any] = {
        **ctx.overrides,
        **MODES[mode],
        "sync": {"watch": False, "on_search": False},
    }
    settings = ctx.settings_for(workspace, overrides)
    manager = open_memory(workspace, settings=settings)
    started = time.perf_counter()
    with click.progressbar(length=1, label="indexing", file=sys.stderr) as bar:

        def progress(p: Any) -> None:
            bar.length = max(1, p.total)
            bar.update(p.completed - bar.pos)

        manager.sync(reason="eval", progress=progress)
    index_seconds = time.perf_counter() - started
    timings: list[float] = []

    def search(query: str) -> Any:
        t0 = time.perf_counter()
        found = manager.search(query, max_results=100, min_score=0.0)
        timings.append((time.perf_counter() - t0) * 1000)
        return found

    metrics = evaluate(dataset, search, path_to_doc)
    status = manager.status()
    report = {
        **metrics,
        "queries": int(metrics["queries"]),
        "mode": mode,
        "dataset": dataset_dir.name,
        "split": split,
        "provider": status.provider,
        "model": status.model,
        "chunks": status.chunks,
        "index_seconds": round(index_seconds, 2),
        "search_ms_p50": round(statistics.median(timings), 2) if timings else None,
    }
    if as_json:
        click.echo(json.dumps(report))
        return
    click.echo(
        f"{dataset_dir.name} [{split}] mode={mode} provider={status.provider} "
        f"model={status.model} queries={report['queries']}"
    )
    for key in ("ndcg_at_10", "recall_at_10", "recall_at_100", "mrr_at_10"):
        click.echo(f"  {key:<14} {metrics[key]:.4f}")
    click.echo(f"  index {index_seconds:.1f} s, search p50 {report['search_ms_p50']} ms")
