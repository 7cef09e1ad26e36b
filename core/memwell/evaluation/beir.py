"""Retrieval-quality evaluation on BEIR-layout datasets (corpus, queries, qrels).

Each document becomes one Markdown memory file (``# title`` then the text); chunk hits are
collapsed to documents (best chunk wins) and scored with nDCG@10, Recall@10, Recall@100 and
MRR@10, as in the BEIR protocol.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import math
import re
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from memwell.contract.errors import ConfigError
from memwell.contract.models import MemorySearchResult

_SAFE_ID = re.compile(r"[^A-Za-z0-9_.-]")


@dataclass(frozen=True)
class Dataset:
    """A BEIR-style dataset: documents, queries and graded relevance judgments."""

    corpus: dict[str, tuple[str, str]]
    queries: dict[str, str]
    qrels: dict[str, dict[str, int]]


def _open_text(path: Path) -> IO[str]:
    if path.suffix == ".gz":
        return gzip.open(path, "rt", encoding="utf-8")
    return path.open(encoding="utf-8")


def _jsonl(path: Path) -> Iterator[dict[str, Any]]:
    with _open_text(path) as fh:
        for line in fh:
            if line.strip():
                yield json.loads(line)


def load_dataset(directory: Path, split: str) -> Dataset:
    """Read ``corpus.jsonl[.gz]``, ``queries.jsonl`` and ``qrels/<split>.tsv``."""
    corpus_path = next(
        (p for p in (directory / "corpus.jsonl", directory / "corpus.jsonl.gz") if p.is_file()),
        None,
    )
    qrels_path = directory / "qrels" / f"{split}.tsv"
    if corpus_path is None or not (directory / "queries.jsonl").is_file():
        raise ConfigError(f"{directory} is not a BEIR dataset (corpus.jsonl, queries.jsonl)")
    if not qrels_path.is_file():
        raise ConfigError(f"no judgments for split {split!r}: {qrels_path} is missing")
    corpus = {
        str(d["_id"]): (str(d.get("title") or ""), str(d.get("text") or ""))
        for d in _jsonl(corpus_path)
    }
    queries = {str(q["_id"]): str(q["text"]) for q in _jsonl(directory / "queries.jsonl")}
    qrels: dict[str, dict[str, int]] = {}
    with qrels_path.open(encoding="utf-8") as fh:
        for line in fh:
            parts = line.rstrip("\n").split("\t")
            if len(parts) < 3 or not parts[2].lstrip("-").isdigit():
                continue  # header or malformed line
            qid, did, grade = parts[0], parts[1], int(parts[2])
            if grade > 0 and qid in queries:
                qrels.setdefault(qid, {})[did] = grade
    return Dataset(corpus, queries, qrels)


def with_queries(dataset: Dataset, queries_file: Path) -> Dataset:
    """``dataset`` asked with the query texts of ``queries_file`` (BEIR ``queries.jsonl``),
    matched by id: a parallel translation of the queries measures cross-lingual retrieval.

    Only judged queries present in both are kept; none in common is an error.
    """
    if not queries_file.is_file():
        raise ConfigError(f"--queries: {queries_file} is not a file")
    texts = {str(q["_id"]): str(q["text"]) for q in _jsonl(queries_file)}
    shared = {qid: texts[qid] for qid in dataset.queries if qid in texts and qid in dataset.qrels}
    if not shared:
        raise ConfigError(f"--queries: {queries_file} has no query id the dataset judges")
    qrels = {qid: dataset.qrels[qid] for qid in shared}
    return Dataset(dataset.corpus, shared, qrels)


def doc_filename(doc_id: str) -> str:
    """A file name for a document id that is safe on every filesystem."""
    safe = _SAFE_ID.sub("_", doc_id)
    if safe != doc_id or len(safe) > 100:
        safe = f"{safe[:80]}-{hashlib.sha1(doc_id.encode()).hexdigest()[:10]}"
    return f"{safe}.md"


def write_corpus(dataset: Dataset, memory_dir: Path) -> dict[str, str]:
    """Write one Markdown file per document; returns workspace path -> document id."""
    memory_dir.mkdir(parents=True, exist_ok=True)
    mapping: dict[str, str] = {}
    for doc_id, (title, text) in dataset.corpus.items():
        name = doc_filename(doc_id)
        body = f"# {title}\n\n{text}\n" if title else f"{text}\n"
        path = memory_dir / name
        if not path.is_file() or path.read_text(encoding="utf-8") != body:
            path.write_text(body, encoding="utf-8")
        mapping[f"memory/{name}"] = doc_id
    return mapping


def collapse_to_documents(
    results: Iterable[MemorySearchResult], path_to_doc: Mapping[str, str]
) -> list[str]:
    """Document ids in rank order, each at the rank of its best chunk."""
    seen: dict[str, None] = {}
    for hit in results:
        doc = path_to_doc.get(hit.path)
        if doc is not None and doc not in seen:
            seen[doc] = None
    return list(seen)


def ndcg_at_k(ranked: Sequence[str], relevant: Mapping[str, int], k: int = 10) -> float:
    dcg = sum(
        (2 ** relevant.get(doc, 0) - 1) / math.log2(i + 2) for i, doc in enumerate(ranked[:k])
    )
    ideal = sorted(relevant.values(), reverse=True)[:k]
    idcg = sum((2**g - 1) / math.log2(i + 2) for i, g in enumerate(ideal))
    return dcg / idcg if idcg else 0.0


def recall_at_k(ranked: Sequence[str], relevant: Mapping[str, int], k: int) -> float:
    if not relevant:
        return 0.0
    return len(set(ranked[:k]) & set(relevant)) / len(relevant)


def mrr_at_k(ranked: Sequence[str], relevant: Mapping[str, int], k: int = 10) -> float:
    for i, doc in enumerate(ranked[:k]):
        if doc in relevant:
            return 1.0 / (i + 1)
    return 0.0


def floor_dropped(
    ranked: Sequence[str], kept: Collection[str], relevant: Collection[str], depth: int
) -> float:
    """Of the unjudged documents among the first ``depth`` of ``ranked`` (the unfloored
    ranking), the share the floor dropped (absent from ``kept``); 1 when there are none.
    The floored search ranks the same way and returns at most that many hits, so what it
    leaves out of them is what the score floor judged unrelated."""
    unrelated = [doc for doc in ranked[:depth] if doc not in relevant]
    if not unrelated:
        return 1.0
    return sum(1 for doc in unrelated if doc not in kept) / len(unrelated)


def evaluate(
    dataset: Dataset,
    search: Callable[[str], list[MemorySearchResult]],
    path_to_doc: Mapping[str, str],
    *,
    floored: Callable[[str], list[MemorySearchResult]] | None = None,
    floor_depth: int = 6,
    progress: Callable[[int, int], None] | None = None,
) -> dict[str, float]:
    """Run every judged query and average the metrics over them.

    ``floored`` (a search with the configured floor and ``floor_depth`` = its ``max_results``)
    measures the floor as a classifier: ``floor_kept``, the fraction of queries with a
    relevant document among its hits; ``floor_kept_found``, the same among the queries whose
    first ``floor_depth`` unfloored hits hold one (what the floor itself loses, apart from
    the ranking; 1 when no query has one); and ``floor_dropped``, the mean
    :func:`floor_dropped` of the documents of the first ``floor_depth`` unfloored hits.
    """
    judged = [qid for qid in dataset.queries if qid in dataset.qrels]
    totals = {"ndcg_at_10": 0.0, "recall_at_10": 0.0, "recall_at_100": 0.0, "mrr_at_10": 0.0}
    found = kept_found = 0
    if floored is not None:
        totals["floor_kept"] = totals["floor_dropped"] = 0.0
    for n, qid in enumerate(judged, 1):
        results = search(dataset.queries[qid])
        ranked = collapse_to_documents(results, path_to_doc)
        relevant = dataset.qrels[qid]
        totals["ndcg_at_10"] += ndcg_at_k(ranked, relevant)
        totals["recall_at_10"] += recall_at_k(ranked, relevant, 10)
        totals["recall_at_100"] += recall_at_k(ranked, relevant, 100)
        totals["mrr_at_10"] += mrr_at_k(ranked, relevant)
        if floored is not None:
            kept = collapse_to_documents(floored(dataset.queries[qid]), path_to_doc)
            answered = bool(set(kept) & set(relevant))
            totals["floor_kept"] += float(answered)
            top = collapse_to_documents(results[:floor_depth], path_to_doc)
            if set(top) & set(relevant):
                found += 1
                kept_found += answered
            totals["floor_dropped"] += floor_dropped(top, set(kept), set(relevant), floor_depth)
        if progress is not None:
            progress(n, len(judged))
    count = max(1, len(judged))
    metrics = {key: value / count for key, value in totals.items()}
    if floored is not None:
        metrics["floor_kept_found"] = kept_found / found if found else 1.0
    return metrics | {"queries": float(len(judged))}
