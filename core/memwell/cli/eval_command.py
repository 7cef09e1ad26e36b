"""``memwell eval``: retrieval quality on a BEIR-layout or a LoCoMo-layout dataset."""

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

from memwell.cli.main import Context, cli, pass_ctx
from memwell.contract.manager import MemorySearchManager
from memwell.contract.models import MemorySearchResult
from memwell.evaluation.beir import evaluate, load_dataset, with_queries, write_corpus
from memwell.evaluation.conversation import (
    FLOOR_METRICS,
    LAYOUTS,
    Question,
    evaluate_conversation,
    is_conversation_dataset,
    load_conversations,
    metric_names,
    summarize,
    write_conversation,
)
from memwell.runtime.factory import open_memory

MODES: dict[str, dict[str, Any]] = {
    "keyword": {"provider": "none"},
    "vector": {"query": {"hybrid": {"enabled": False}}},
    "hybrid": {},
}


def _default_workdir(dataset: Path, family: str) -> Path:
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "memwell" / "eval"
    tag = hashlib.sha1(str(dataset.resolve()).encode()).hexdigest()[:10]
    return base / f"{dataset.name}-{tag}" / family


def _open_indexed(
    ctx: Context, workspace: Path, mode: str
) -> tuple[MemorySearchManager, float, int]:
    """Open ``workspace`` in ``mode`` with syncing off and index it: the manager, the seconds
    it took and the configured ``max_results`` (the depth of a floored search)."""
    # The recall cache is off: its semantic tier would answer a question with the hits of a
    # similar earlier one, which measures the cache, not retrieval.
    overrides: dict[str, Any] = {
        **ctx.overrides,
        **MODES[mode],
        "sync": {"watch": False, "on_search": False},
        "cache": {"recall": {"enabled": False}},
    }
    settings = ctx.settings_for(workspace, overrides)
    manager = open_memory(workspace, settings=settings)
    started = time.perf_counter()
    with click.progressbar(length=1, label=f"indexing {workspace.name}", file=sys.stderr) as bar:

        def progress(p: Any) -> None:
            bar.length = max(1, p.total)
            bar.update(p.completed - bar.pos)

        manager.sync(reason="eval", progress=progress)
    return manager, time.perf_counter() - started, settings.query.max_results


class _TimedSearch:
    """``manager.search`` with a generous limit and no floor, timing every call."""

    def __init__(self, max_results: int) -> None:
        self.max_results = max_results
        self.timings: list[float] = []
        self.manager: MemorySearchManager | None = None

    def __call__(self, query: str) -> list[MemorySearchResult]:
        assert self.manager is not None
        t0 = time.perf_counter()
        found = self.manager.search(query, max_results=self.max_results, min_score=0.0)
        self.timings.append((time.perf_counter() - t0) * 1000)
        return found

    def floored(self, query: str) -> list[MemorySearchResult]:
        """What an agent gets: the configured ``min_score`` and ``max_results`` (untimed)."""
        assert self.manager is not None
        return self.manager.search(query)

    def p50(self) -> float | None:
        return round(statistics.median(self.timings), 2) if self.timings else None


@cli.command(name="eval")
@click.option(
    "--dataset",
    "dataset_dir",
    required=True,
    type=click.Path(exists=True, file_okay=False, path_type=Path),
    help="BEIR-layout directory (corpus.jsonl[.gz], queries.jsonl, qrels/<split>.tsv), "
    "or LoCoMo-layout (turns.jsonl, questions.jsonl).",
)
@click.option("--split", default="test", show_default=True, help="Judgment split (BEIR only).")
@click.option("--mode", type=click.Choice(list(MODES)), default="hybrid", show_default=True)
@click.option(
    "--workdir",
    type=click.Path(file_okay=False, path_type=Path),
    help="Workspace to build (kept, so re-runs reuse the index and the embedding cache).",
)
@click.option(
    "--rerank",
    "reranker",
    metavar="NAME",
    help="Rerank each query's hits with this reranker ([rerank] provider; off by default).",
)
@click.option(
    "--layout",
    type=click.Choice([*LAYOUTS, "both"]),
    default="both",
    show_default=True,
    help="LoCoMo only: session files named memory/YYYY-MM-DD-session-N.md (per-session) or "
    "memory/YYYY-MM-DD.md, -2 for a day's second session (per-day); both are reported by default.",
)
@click.option(
    "--queries",
    "queries_file",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Ask with these query texts instead (BEIR queries.jsonl, same ids): a translation "
    "of the queries measures cross-lingual retrieval (BEIR only).",
)
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
@pass_ctx
def eval_command(
    ctx: Context,
    dataset_dir: Path,
    split: str,
    mode: str,
    workdir: Path | None,
    reranker: str | None,
    layout: str,
    queries_file: Path | None,
    as_json: bool,
) -> None:
    """Index a dataset as Markdown memory and report its retrieval quality.

    BEIR layout: nDCG@10, Recall@10/100, MRR@10. LoCoMo layout: each conversation indexed on
    its own, session-level Recall@1/3/5 and turn-level recall in the top 5 and 10 hits,
    overall and per category, for each file layout (a ranking that leans on file names shows
    as a gap between them).
    """
    family = "keyword" if mode == "keyword" else "embedding"
    workspace = workdir or _default_workdir(dataset_dir, family)
    if reranker:
        ctx.overrides = {**ctx.overrides, "rerank": {"provider": reranker}}
    if is_conversation_dataset(dataset_dir):
        if queries_file is not None:
            raise click.UsageError("--queries is for BEIR-layout datasets only")
        layouts = LAYOUTS if layout == "both" else (layout,)
        reports = {
            name: _eval_conversations(ctx, dataset_dir, mode, workspace / name, reranker, name)
            for name in layouts
        }
        if as_json:
            only = next(iter(reports.values()))
            click.echo(json.dumps(only if len(reports) == 1 else {"layouts": reports}))
            return
        for report in reports.values():
            _print_conversation_report(report)
        return
    dataset = load_dataset(dataset_dir, split)
    if queries_file is not None:
        dataset = with_queries(dataset, queries_file)
    workspace.mkdir(parents=True, exist_ok=True)
    path_to_doc = write_corpus(dataset, workspace / "memory")
    manager, index_seconds, depth = _open_indexed(ctx, workspace, mode)
    search = _TimedSearch(100)
    search.manager = manager
    metrics = evaluate(dataset, search, path_to_doc, floored=search.floored, floor_depth=depth)
    status = manager.status()
    report = {
        **metrics,
        "queries": int(metrics["queries"]),
        "mode": mode,
        "rerank": reranker,
        "dataset": dataset_dir.name,
        "split": split,
        "queries_file": str(queries_file) if queries_file else None,
        "provider": status.provider,
        "model": status.model,
        "chunks": status.chunks,
        "index_seconds": round(index_seconds, 2),
        "search_ms_p50": search.p50(),
    }
    if as_json:
        click.echo(json.dumps(report))
        return
    click.echo(
        f"{dataset_dir.name} [{split}]"
        + (f" queries={queries_file}" if queries_file else "")
        + f" mode={mode} rerank={reranker or 'off'} "
        f"provider={status.provider} "
        f"model={status.model} queries={report['queries']}"
    )
    for key in (
        "ndcg_at_10",
        "recall_at_10",
        "recall_at_100",
        "mrr_at_10",
        "floor_kept",
        "floor_kept_found",
        "floor_dropped",
    ):
        click.echo(f"  {key:<16} {metrics[key]:.4f}")
    click.echo(f"  index {index_seconds:.1f} s, search p50 {report['search_ms_p50']} ms")


def _eval_conversations(
    ctx: Context,
    dataset_dir: Path,
    mode: str,
    workspace: Path,
    reranker: str | None,
    layout: str,
) -> dict[str, Any]:
    """Index every conversation of ``dataset_dir`` written in ``layout``; the report."""
    conversations = load_conversations(dataset_dir)
    search = _TimedSearch(50)
    scored: list[tuple[Question, dict[str, float]]] = []
    index_seconds = 0.0
    chunks = 0
    status = None
    for conv_id, conversation in conversations.items():
        conv_workspace = workspace / conv_id
        written = write_conversation(conversation, conv_workspace / "memory", layout)
        manager, seconds, depth = _open_indexed(ctx, conv_workspace, mode)
        index_seconds += seconds
        search.manager = manager
        scored.extend(evaluate_conversation(conversation, written, search, search.floored, depth))
        status = manager.status()
        chunks += status.chunks
        manager.close()
    return {
        **summarize(scored),
        "mode": mode,
        "layout": layout,
        "rerank": reranker,
        "dataset": dataset_dir.name,
        "conversations": len(conversations),
        "provider": status.provider if status else None,
        "model": status.model if status else None,
        "chunks": chunks,
        "index_seconds": round(index_seconds, 2),
        "search_ms_p50": search.p50(),
    }


def _print_conversation_report(report: dict[str, Any]) -> None:
    click.echo(
        f"{report['dataset']} layout={report['layout']} mode={report['mode']} "
        f"rerank={report['rerank'] or 'off'} "
        f"provider={report['provider']} model={report['model']} "
        f"conversations={report['conversations']} "
        f"questions={int(report['overall']['questions'])}"
    )
    names = [*metric_names(), *FLOOR_METRICS]
    labels = [
        n.replace("session_recall_at_", "sess R@").replace("turn_recall_at_", "turn R@")
        for n in names
    ]
    width = max(map(len, labels)) + 2  # a space between every two column names
    click.echo(f"  {'':<14}" + "".join(f"{label:>{width}}" for label in labels))
    rows = [("overall", report["overall"]), ("categories 1-4", report["categories_1_4"])]
    rows += list(report["by_category"].items())
    for label, means in rows:
        cells = "".join(f"{means[n]:>{width}.3f}" for n in names)
        click.echo(f"  {label:<14}{cells}  ({int(means['questions'])} questions)")
    click.echo(f"  index {report['index_seconds']:.1f} s, search p50 {report['search_ms_p50']} ms")
