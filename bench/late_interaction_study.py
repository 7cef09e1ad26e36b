"""Late interaction (MaxSim over MiniLM's token vectors) as a reranker of the top hits (issue 43).

    python bench/late_interaction_study.py --dataset ../shared/data/locomo-dev \\
        --workdir DIR [--layout per-session] [--candidates 20] [--weights 0,0.1,0.2,0.4]
    python bench/late_interaction_study.py --dataset ../shared/data/beir-scifact --split train \\
        --workdir DIR [--queries 200]

``DIR`` is a ``memwell eval --workdir`` already built for the dataset (hybrid mode): nothing is
re-indexed. Each query's first ``--candidates`` hits (default settings, no floor) are scored by
the ``late-interaction`` reranker (``memwell_local.late_interaction``, what
``[rerank] provider = "late-interaction"`` runs) on their snippets, and rescored, per weight,
as the rerank stage does: ``w x maxsim + (1 - w) x score`` (w = 0 is the backend's ranking).
The floor figure reorders the backend's floored hits the same way (a weight below 1 keeps the
backend's floor). Prints, per weight, the dataset's figures (session R@1/R@5 and floor_kept for
LoCoMo; nDCG@10, Recall@10 and floor_kept for BEIR) and the cost per query: the query's own
token vectors, each candidate encoded at query time, and MaxSim over cached candidates.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from memwell.contract.models import MemorySearchResult
from memwell.evaluation.beir import (
    collapse_to_documents,
    load_dataset,
    ndcg_at_k,
    recall_at_k,
    write_corpus,
)
from memwell.evaluation.conversation import (
    floor_scores,
    is_conversation_dataset,
    load_conversations,
    score_question,
    write_conversation,
)
from memwell.runtime.factory import close_all, open_memory
from memwell_local.late_interaction import (
    LateInteractionConfig,
    LateInteractionReranker,
    maxsim,
)
from memwell_local.numpy_bert import NumpyBertEncoder
from memwell_local.provider import _packaged_model_dir

OVERRIDES: dict[str, Any] = {
    "sync": {"watch": False, "on_search": False},
    "cache": {"recall": {"enabled": False}},
}
MAX_RESULTS = 6
Search = Callable[[Any, str, bool], list[MemorySearchResult]]
Score = Callable[[Any, list[MemorySearchResult], list[MemorySearchResult]], dict[str, float]]


class Timed:
    """The reranker's MaxSim scores of each query's candidates, with the cost split up."""

    def __init__(self) -> None:
        model_dir = _packaged_model_dir()
        encoder = NumpyBertEncoder.load(model_dir, 256) if model_dir else None
        if encoder is None:
            raise SystemExit("the packaged all-MiniLM-L6-v2 is not installed")
        self.late = LateInteractionReranker(
            "all-MiniLM-L6-v2", encoder, LateInteractionConfig(cache_mb=4096)
        )
        self.query_ms: list[float] = []
        self.maxsim_ms: list[float] = []
        self.encode_seconds = 0.0
        self.encoded = 0

    def scores(self, query: str, texts: Sequence[str]) -> dict[str, float]:
        t0 = time.perf_counter()
        q = self.late.encoder.token_vectors([query])[0]
        t1 = time.perf_counter()
        missing = {t for t in texts if self.late.cache.get(t) is None}
        rows = self.late.token_rows(texts)
        t2 = time.perf_counter()
        found = {t: max(0.0, min(1.0, maxsim(q, r))) for t, r in zip(texts, rows, strict=True)}
        t3 = time.perf_counter()
        self.query_ms.append(1000 * (t1 - t0))
        self.maxsim_ms.append(1000 * (t3 - t2))
        self.encode_seconds += t2 - t1
        self.encoded += len(missing)
        return found


def reranked(
    hits: list[MemorySearchResult], maxsim_of: dict[str, float], weight: float, depth: int
) -> list[MemorySearchResult]:
    head = sorted(
        hits[:depth],
        key=lambda h: weight * maxsim_of[h.snippet] + (1 - weight) * h.score,
        reverse=True,
    )
    return head + hits[depth:]


def study(
    queries: Sequence[tuple[Any, str]],
    search: Search,
    score: Score,
    weights: Sequence[float],
    depth: int,
) -> dict[str, Any]:
    timed = Timed()
    totals: dict[float, dict[str, float]] = {w: {} for w in weights}
    for key, text in queries:
        hits = search(key, text, False)
        floored = search(key, text, True)
        maxsim_of = timed.scores(text, [h.snippet for h in hits[:depth] + floored[:depth]])
        for weight in weights:
            ranked = reranked(hits, maxsim_of, weight, depth)
            kept = reranked(floored, maxsim_of, weight, depth)[:MAX_RESULTS]
            for name, value in score(key, ranked, kept).items():
                totals[weight][name] = totals[weight].get(name, 0.0) + value
    count = max(1, len(queries))
    per_candidate = 1000 * timed.encode_seconds / max(1, timed.encoded)
    return {
        "queries": len(queries),
        "candidates": depth,
        "load": os.getloadavg()[0],
        "query_tokens_ms_p50": round(statistics.median(timed.query_ms), 1),
        "candidate_encode_ms_mean": round(per_candidate, 1),
        "maxsim_cached_ms_p50": round(statistics.median(timed.maxsim_ms), 2),
        "cold_query_ms_estimate": round(
            statistics.median(timed.query_ms) + depth * per_candidate, 0
        ),
        "by_weight": {
            str(w): {k: round(v / count, 4) for k, v in t.items()} for w, t in totals.items()
        },
    }


def locomo(args: argparse.Namespace) -> dict[str, Any]:
    queries: list[tuple[Any, str]] = []
    managers = {}
    for conv_id, conversation in load_conversations(args.dataset).items():
        workspace = args.workdir / args.layout / conv_id
        written = write_conversation(conversation, workspace / "memory", args.layout)
        managers[conv_id] = open_memory(workspace, overrides=OVERRIDES)
        queries += [((q, written), q.text) for q in conversation.questions]

    def search(key: Any, text: str, floor: bool) -> list[MemorySearchResult]:
        manager = managers[key[0].conv_id]
        if floor:
            return manager.search(text, max_results=args.candidates)
        return manager.search(text, max_results=50, min_score=0.0)

    def score(
        key: Any, hits: list[MemorySearchResult], kept: list[MemorySearchResult]
    ) -> dict[str, float]:
        figures = score_question(key[0], key[1], hits)
        floor = floor_scores(key[0], key[1], kept, hits[:MAX_RESULTS])
        return {k: figures[k] for k in ("session_recall_at_1", "session_recall_at_5")} | {
            "floor_kept": floor["floor_kept"]
        }

    return study(queries, search, score, args.weights, args.candidates)


def beir(args: argparse.Namespace) -> dict[str, Any]:
    dataset = load_dataset(args.dataset, args.split)
    path_to_doc = write_corpus(dataset, args.workdir / "memory")
    memory = open_memory(args.workdir, overrides=OVERRIDES)
    judged = [qid for qid in dataset.queries if qid in dataset.qrels][: args.queries]
    queries = [(qid, dataset.queries[qid]) for qid in judged]

    def search(key: Any, text: str, floor: bool) -> list[MemorySearchResult]:
        if floor:
            return memory.search(text, max_results=args.candidates)
        return memory.search(text, max_results=100, min_score=0.0)

    def score(
        key: Any, hits: list[MemorySearchResult], kept: list[MemorySearchResult]
    ) -> dict[str, float]:
        ranked = collapse_to_documents(hits, path_to_doc)
        relevant = dataset.qrels[key]
        kept_docs = set(collapse_to_documents(kept, path_to_doc))
        return {
            "ndcg_at_10": ndcg_at_k(ranked, relevant),
            "recall_at_10": recall_at_k(ranked, relevant, 10),
            "floor_kept": float(bool(kept_docs & set(relevant))),
        }

    return study(queries, search, score, args.weights, args.candidates)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--dataset", type=Path, required=True)
    parser.add_argument("--workdir", type=Path, required=True)
    parser.add_argument("--split", default="test")
    parser.add_argument("--layout", default="per-session")
    parser.add_argument("--candidates", type=int, default=20)
    parser.add_argument("--queries", type=int, default=None)
    parser.add_argument(
        "--weights",
        type=lambda s: [float(w) for w in s.split(",")],
        default=[0, 0.1, 0.2, 0.3, 0.5, 1],
    )
    args = parser.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    report = locomo(args) if is_conversation_dataset(args.dataset) else beir(args)
    close_all()
    print(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
