"""Late interaction (MaxSim over MiniLM's token vectors) as a reranker of the top hits (issue 43).

    python bench/late_interaction_study.py --dataset ../shared/data/locomo-dev \\
        --workdir DIR [--layout per-session] [--candidates 20] [--weights 0,0.1,0.2,0.4]
    python bench/late_interaction_study.py --dataset ../shared/data/beir-scifact --split train \\
        --workdir DIR [--queries 200]

``DIR`` is a ``memwell eval --workdir`` already built for the dataset (hybrid mode): nothing is
re-indexed. Each query's first ``--candidates`` hits (default settings, no floor) are
rescored as ``score + w * maxsim``, where ``maxsim`` is ColBERT's late-interaction score: the
mean over the query's token vectors of their best cosine with a token vector of the chunk,
both from the shipped all-MiniLM-L6-v2's last layer (``NumpyBertEncoder.token_vectors``; no
new weights). Prints, per weight, the dataset's figures (session R@1/R@5 for LoCoMo, nDCG@10
for BEIR) and the cost per query of encoding the candidates' tokens (the chunk tokens would
have to be encoded at query time or stored at index time: about 300 x 384 floats per chunk).
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

import numpy as np
from memwell.contract.models import MemorySearchResult
from memwell.evaluation.beir import collapse_to_documents, load_dataset, ndcg_at_k, write_corpus
from memwell.evaluation.conversation import (
    is_conversation_dataset,
    load_conversations,
    score_question,
    write_conversation,
)
from memwell.runtime.factory import close_all, open_memory
from memwell_local.numpy_bert import NumpyBertEncoder
from memwell_local.provider import _packaged_model_dir

OVERRIDES: dict[str, Any] = {
    "sync": {"watch": False, "on_search": False},
    "cache": {"recall": {"enabled": False}},
}


class LateInteraction:
    """MaxSim of a query against chunk texts, with the chunks' token vectors cached."""

    def __init__(self) -> None:
        model_dir = _packaged_model_dir()
        encoder = NumpyBertEncoder.load(model_dir, 256) if model_dir else None
        if encoder is None:
            raise SystemExit("the packaged all-MiniLM-L6-v2 is not installed")
        self.encoder = encoder
        self.cache: dict[str, np.ndarray] = {}
        self.seconds: list[float] = []

    def scores(self, query: str, texts: Sequence[str]) -> list[float]:
        started = time.perf_counter()
        q = self.encoder.token_vectors([query])[0]
        missing = [t for t in dict.fromkeys(texts) if t not in self.cache]
        for text, tokens in zip(missing, self.encoder.token_vectors(missing), strict=True):
            self.cache[text] = tokens
        self.seconds.append(time.perf_counter() - started)
        return [float((q @ self.cache[t].T).max(axis=1).mean()) for t in texts]


def chunk_text(workspace: Path, hit: MemorySearchResult) -> str:
    lines = (workspace / hit.path).read_text(encoding="utf-8").splitlines()
    return "\n".join(lines[hit.start_line - 1 : hit.end_line])


def reranked(
    hits: list[MemorySearchResult], maxsim: Sequence[float], weight: float, depth: int
) -> list[MemorySearchResult]:
    head = sorted(
        zip(hits[:depth], maxsim, strict=False),
        key=lambda pair: pair[0].score + weight * pair[1],
        reverse=True,
    )
    return [hit for hit, _ in head] + hits[depth:]


def study(
    queries: Sequence[tuple[Any, str, Path]],
    search: Callable[[Any, str], list[MemorySearchResult]],
    score: Callable[[Any, list[MemorySearchResult]], dict[str, float]],
    weights: Sequence[float],
    depth: int,
) -> dict[str, Any]:
    late = LateInteraction()
    totals: dict[float, dict[str, float]] = {w: {} for w in weights}
    for key, text, workspace in queries:
        hits = search(key, text)
        maxsim = late.scores(text, [chunk_text(workspace, h) for h in hits[:depth]])
        for weight in weights:
            for name, value in score(key, reranked(hits, maxsim, weight, depth)).items():
                totals[weight][name] = totals[weight].get(name, 0.0) + value
    count = max(1, len(queries))
    return {
        "queries": len(queries),
        "candidates": depth,
        "encode_ms_p50": round(1000 * statistics.median(late.seconds), 1),
        "by_weight": {
            str(w): {k: round(v / count, 4) for k, v in t.items()} for w, t in totals.items()
        },
    }


def locomo(args: argparse.Namespace) -> dict[str, Any]:
    queries: list[tuple[Any, str, Path]] = []
    managers = {}
    for conv_id, conversation in load_conversations(args.dataset).items():
        workspace = args.workdir / args.layout / conv_id
        written = write_conversation(conversation, workspace / "memory", args.layout)
        managers[conv_id] = open_memory(workspace, overrides=OVERRIDES)
        queries += [((q, written), q.text, workspace) for q in conversation.questions]

    def search(key: Any, text: str) -> list[MemorySearchResult]:
        return managers[key[0].conv_id].search(text, max_results=50, min_score=0.0)

    def score(key: Any, hits: list[MemorySearchResult]) -> dict[str, float]:
        figures = score_question(key[0], key[1], hits)
        return {k: figures[k] for k in ("session_recall_at_1", "session_recall_at_5")}

    return study(queries, search, score, args.weights, args.candidates)


def beir(args: argparse.Namespace) -> dict[str, Any]:
    dataset = load_dataset(args.dataset, args.split)
    path_to_doc = write_corpus(dataset, args.workdir / "memory")
    memory = open_memory(args.workdir, overrides=OVERRIDES)
    judged = [qid for qid in dataset.queries if qid in dataset.qrels][: args.queries]
    queries = [(qid, dataset.queries[qid], args.workdir) for qid in judged]

    def search(key: Any, text: str) -> list[MemorySearchResult]:
        return memory.search(text, max_results=100, min_score=0.0)

    def score(key: Any, hits: list[MemorySearchResult]) -> dict[str, float]:
        ranked = collapse_to_documents(hits, path_to_doc)
        return {"ndcg_at_10": ndcg_at_k(ranked, dataset.qrels[key])}

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
        "--weights", type=lambda s: [float(w) for w in s.split(",")], default=[0, 0.1, 0.2, 0.4, 1]
    )
    args = parser.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    report = locomo(args) if is_conversation_dataset(args.dataset) else beir(args)
    close_all()
    print(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
