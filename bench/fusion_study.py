"""How the hybrid fusion defaults were chosen: fusion variants scored on one built eval index.

Run ``memwell eval --dataset DIR --split train --mode vector`` first (it builds and keeps the
index), then::

    python bench/fusion_study.py --dataset ../shared/data/beir-scifact --split train

(``--workdir`` when the eval was given one.) ``--second-provider NAME`` adds rows where another
embedding provider's cosines (e.g. ``e5``) replace or join the index's, embedding the index's
chunks with it once (kept in ``--second-cache FILE.npz``; SciFact train takes about an hour
with ``e5`` on two cores).

For every judged query this fetches the builtin backend's own keyword candidates (BM25 with
its query builder) and the cosine of every chunk, then scores fusion variants offline and
prints one table of nDCG@10 / Recall@100 at document level (best chunk wins). Tuning uses the
training split only.
"""

from __future__ import annotations

import argparse
import math
import re
import sqlite3
import statistics
import time
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np
from memwell.cli.eval_command import _default_workdir
from memwell.contract.config import load_settings
from memwell.evaluation.beir import load_dataset, ndcg_at_k, recall_at_k, write_corpus
from memwell.providers.runtime import EmbeddingRuntime
from memwell.registry.plugins import get_registry
from memwell.retrieval.fts_query import fts_phrase
from memwell.retrieval.keywords import tokenize
from memwell.retrieval.stopwords import ALL_STOPWORDS
from memwell.runtime.factory import open_memory

CANDIDATES = 200
_DOCS: list[str] = []
_MATRIX: list[Any] = []
_FILE_COSINES: dict[int, np.ndarray[Any, Any]] = {}
"""id(query) -> each chunk's file mean-vector cosine (memwell.retrieval.file_similarity)."""
_FILE_BEST: dict[int, np.ndarray[Any, Any]] = {}
"""id(query) -> each chunk's file's best chunk cosine (max pooling)."""
_FILE_CHUNKS: list[np.ndarray[Any, Any]] = []
"""Each chunk's file's chunk count."""
_COHERENCE: list[np.ndarray[Any, Any]] = []
"""Each chunk's file's coherence: the norm of the mean of its chunks' unit vectors."""
_STRIPPED: dict[int, np.ndarray[Any, Any]] = {}
"""id(query) -> the cosine of every chunk to the query embedded without its stop words."""
_TEXTS: list[str] = []
"""Each chunk's text (matrix row order)."""
_QUERY_TEXTS: dict[int, str] = {}
"""id(query) -> its text."""
_INDEX: list[str] = []
"""The index database's path (keyword feedback runs its expanded queries there)."""
_POSITION: dict[int, int] = {}
"""Chunk rowid -> its matrix row."""
_SECOND: dict[int, np.ndarray[Any, Any]] = {}
"""id(query) -> the cosine of every chunk under ``--second-provider``'s model."""


@dataclass
class QueryData:
    relevant: Mapping[str, int]
    keyword: list[tuple[int, float]]  # (chunk row index, raw BM25 magnitude), best first
    cosine: np.ndarray[Any, Any]  # cosine of every chunk
    vector: np.ndarray[Any, Any]  # the query's unit vector
    stripped: np.ndarray[Any, Any]  # the unit vector of the query without its stop words
    bm25: dict[int, float]  # raw BM25 magnitude of every chunk the query matches


def _collect(
    dataset_dir: Path, split: str, workdir: Path | None
) -> tuple[list[QueryData], list[str]]:
    dataset = load_dataset(dataset_dir, split)
    workspace = workdir or _default_workdir(dataset_dir, "embedding")
    path_to_doc = write_corpus(dataset, workspace / "memory")
    overrides = {"sync": {"watch": False, "on_search": False}}
    settings = load_settings(workspace, overrides=overrides)
    manager: Any = open_memory(workspace, settings=settings)
    manager.sync(reason="study")
    with manager.files.lock:
        store = manager.files.reader_store()
        model = manager.files.reader_meta["model"]
    rowids, matrix = manager.vectors._matrix_for(store, model, manager.generation)
    _INDEX[:] = [store.conn.execute("PRAGMA database_list").fetchone()[2]]
    position = {int(r): i for i, r in enumerate(rowids)}
    _POSITION.update(position)
    rows = store.conn.execute("SELECT rowid, id, path, text FROM chunks").fetchall()
    by_id = {cid: position[rowid] for rowid, cid, _, _ in rows if rowid in position}
    docs = [""] * len(rowids)
    _TEXTS[:] = [""] * len(rowids)
    for rowid, _, path, chunk_text in rows:
        if rowid in position:
            docs[position[rowid]] = path_to_doc.get(path, path)
            _TEXTS[position[rowid]] = chunk_text
    sources = list(settings.sources)
    data: list[QueryData] = []
    for qid, relevant in dataset.qrels.items():
        text = dataset.queries[qid]
        hits = manager.searcher.keyword(store, text, CANDIDATES, sources)
        keyword = [
            (by_id[c.id], c.text_score / (1 - c.text_score) if c.text_score < 1 else 1e9)
            for c in hits
            if c.id in by_id
        ]
        vector = manager.runtime.embed_query(text)
        stripped = manager.runtime.embed_query(_without_stop_words(text))
        every = _every_bm25(manager.searcher, store, text, position)
        data.append(QueryData(relevant, keyword, matrix @ vector, vector, stripped, every))
        _QUERY_TEXTS[id(data[-1])] = text
    _MATRIX[:] = [np.array(matrix)]
    manager.close()
    return data, docs


def _every_bm25(searcher: Any, store: Any, text: str, position: dict[int, int]) -> dict[int, float]:
    """The raw BM25 magnitude of every chunk (matrix row) the query matches, with the terms
    ``Searcher.keyword`` searches (those in more than half of the chunks pruned): the exact
    keyword score a vector hit beyond the keyword top 200 would fuse with."""
    fts = searcher._fts(store, text)
    if fts is None:
        return {}
    if len(fts.terms) > 1 and not fts.like_terms:
        half = store.chunk_total() // 2
        frequencies = store.doc_frequencies(fts.terms, half + 1)
        fts = fts.keeping({t for t, df in frequencies.items() if 0 < df <= half})
    if not fts.match:
        return {}
    return _bm25_matches(store.conn, fts.match, position)


def _bm25_matches(conn: Any, match: str, position: dict[int, int]) -> dict[int, float]:
    """The raw BM25 magnitude of every chunk (matrix row) that FTS5 ``match`` finds."""
    rows = conn.execute(
        "SELECT rowid, bm25(chunks_fts) FROM chunks_fts WHERE chunks_fts MATCH ?", (match,)
    )
    return {position[r]: -float(rank) for r, rank in rows if r in position}


def _without_stop_words(text: str) -> str:
    """``text`` without its stop words (query-side normalisation), or ``text`` if none remain."""
    kept = [w for w in text.split() if re.sub(r"\W", "", w.lower()) not in ALL_STOPWORDS]
    return " ".join(kept) or text


Fusion = Callable[[QueryData], dict[int, float]]


def _top_vector(q: QueryData, n: int = CANDIDATES) -> list[tuple[int, float]]:
    top = np.argpartition(-q.cosine, n)[:n]
    top = top[np.argsort(-q.cosine[top])]
    return [(int(i), float(q.cosine[i])) for i in top]


def _relative(hits: list[tuple[int, float]]) -> dict[int, float]:
    best = max((s for _, s in hits), default=0.0)
    return {i: s / best for i, s in hits} if best > 0 else {}


def _minmax(hits: list[tuple[int, float]]) -> dict[int, float]:
    if not hits:
        return {}
    lo, hi = min(s for _, s in hits), max(s for _, s in hits)
    span = hi - lo or 1.0
    return {i: (s - lo) / span for i, s in hits}


def weighted(wv: float, vec_norm: str = "raw", fill: bool = False) -> Fusion:
    """``wv * vector + (1 - wv) * keyword``; keyword relative to the best BM25."""

    def fuse(q: QueryData) -> dict[int, float]:
        kw = _relative(q.keyword)
        top = _top_vector(q)
        if fill:  # exact cosine for keyword candidates outside the vector top-N
            seen = {i for i, _ in top}
            top += [(i, float(q.cosine[i])) for i in kw if i not in seen]
        vec = dict(top) if vec_norm == "raw" else _minmax(top)
        return {i: wv * vec.get(i, 0.0) + (1 - wv) * kw.get(i, 0.0) for i in set(vec) | set(kw)}

    return fuse


def file_evidence(wv: float, gamma: float, vec_norm: str = "raw") -> Fusion:
    """Weighted fusion where each chunk's missing or weaker side is lifted to ``gamma`` times
    the best score of its file on that side (the keyword and the vector hits of one document
    are often different chunks)."""
    docs = _DOCS

    def fuse(q: QueryData) -> dict[int, float]:
        kw = _relative(q.keyword)
        top = _top_vector(q)
        vec = dict(top) if vec_norm == "raw" else _minmax(top)
        best_kw: dict[str, float] = {}
        best_vec: dict[str, float] = {}
        for i, s in kw.items():
            best_kw[docs[i]] = max(best_kw.get(docs[i], 0.0), s)
        for i, s in vec.items():
            best_vec[docs[i]] = max(best_vec.get(docs[i], 0.0), s)
        out = {}
        for i in set(vec) | set(kw):
            d = docs[i]
            v = max(vec.get(i, 0.0), gamma * best_vec.get(d, 0.0))
            t = max(kw.get(i, 0.0), gamma * best_kw.get(d, 0.0))
            out[i] = wv * v + (1 - wv) * t
        return out

    return fuse


def _file_cosine_maps(data: list[QueryData], docs: list[str]) -> dict[int, np.ndarray[Any, Any]]:
    names = sorted(set(docs))
    index = {d: j for j, d in enumerate(names)}
    chunk_file = np.array([index[d] for d in docs])
    matrix = _MATRIX[0]
    sums = np.zeros((len(names), matrix.shape[1]), dtype=np.float64)
    np.add.at(sums, chunk_file, matrix.astype(np.float64))
    norms = np.linalg.norm(sums, axis=1, keepdims=True)
    means = sums / norms
    _FILE_CHUNKS[:] = [np.bincount(chunk_file)[chunk_file]]
    _COHERENCE[:] = [(norms[:, 0] / np.bincount(chunk_file))[chunk_file]]
    for q in data:
        best = np.full(len(names), -1.0)
        np.maximum.at(best, chunk_file, q.cosine)
        _FILE_BEST[id(q)] = best[chunk_file]
        _STRIPPED[id(q)] = matrix @ q.stripped
    return {id(q): (means @ q.vector)[chunk_file] for q in data}


def file_mean(wv: float, file_weight: float, *, pool: str = "mean", scale_above: int = 0) -> Fusion:
    """Weighted fusion, cosines filled in, each chunk's cosine blended with its file's
    mean-vector cosine (what ``query.hybrid.file_weight`` does); ``pool="max"`` blends with
    the file's best chunk cosine instead, and ``scale_above`` n scales the weight by
    ``min(1, n / chunks of the file)`` (less file evidence for files of many chunks)."""

    def fuse(q: QueryData) -> dict[int, float]:
        kw = _relative(q.keyword)
        whole = (_FILE_BEST if pool == "max" else _FILE_COSINES)[id(q)]
        weight: Any = file_weight
        if scale_above:
            weight = file_weight * np.minimum(1.0, scale_above / _FILE_CHUNKS[0])
        blended = (1 - weight) * q.cosine + weight * whole
        vec = dict(_top_vector(q))
        for i in kw:
            vec.setdefault(i, float(q.cosine[i]))
        return {i: wv * float(blended[i]) + (1 - wv) * kw.get(i, 0.0) for i in vec}

    return fuse


def exact_both(wv: float, file_weight: float = 0.0, min_coherence: float | None = None) -> Fusion:
    """Weighted fusion where every candidate has both exact scores (the cosine of keyword
    hits and, new, the BM25 of vector hits beyond the keyword top 200), each chunk's cosine
    blended with its file's mean-vector cosine at ``file_weight``, scaled by the file's
    coherence ramp from ``min_coherence`` (``None``: the same weight for every file)."""

    def fuse(q: QueryData) -> dict[int, float]:
        best = max((s for _, s in q.keyword), default=0.0)
        weight: Any = file_weight
        if min_coherence is not None:
            ramp = (_COHERENCE[0] - min_coherence) / (1 - min_coherence)
            weight = file_weight * np.clip(ramp, 0.0, 1.0)
        blended = (1 - weight) * q.cosine + weight * _FILE_COSINES[id(q)]
        ids = {i for i, _ in _top_vector(q)} | {i for i, _ in q.keyword}
        return {
            i: wv * float(blended[i]) + (1 - wv) * (q.bm25.get(i, 0.0) / best if best else 0.0)
            for i in ids
        }

    return fuse


def stripped_query(wv: float) -> Fusion:
    """Weighted fusion, filled, with the vector side embedded from the query without its stop
    words (the keyword side drops them already)."""

    def fuse(q: QueryData) -> dict[int, float]:
        kw = _relative(q.keyword)
        cosine = _STRIPPED[id(q)]
        top = np.argpartition(-cosine, CANDIDATES)[:CANDIDATES]
        vec = {int(i): float(cosine[i]) for i in top}
        for i in kw:
            vec.setdefault(i, float(cosine[i]))
        return {i: wv * vec[i] + (1 - wv) * kw.get(i, 0.0) for i in vec}

    return fuse


def vector_feedback(wv: float, top: int, beta: float) -> Fusion:
    """Weighted fusion, filled, after one round of pseudo-relevance feedback on the vector
    side (Rocchio): the query vector plus ``beta`` times the mean vector of the ``top``
    chunks of the first fused ranking, renormalised, then fused again."""
    first = weighted(wv, fill=True)

    def fuse(q: QueryData) -> dict[int, float]:
        scores = first(q)
        best = sorted(scores, key=lambda i: -scores[i])[:top]
        moved = q.vector + beta * _MATRIX[0][best].mean(axis=0)
        moved = moved / np.linalg.norm(moved)
        again = QueryData(q.relevant, q.keyword, _MATRIX[0] @ moved, moved, q.stripped, q.bm25)
        return first(again)

    return fuse


def rrf(wv: float, k: int = 60) -> Fusion:
    def fuse(q: QueryData) -> dict[int, float]:
        out: dict[int, float] = {}
        for w, hits in ((wv, _top_vector(q)), (1 - wv, q.keyword)):
            for rank, (i, _) in enumerate(hits, start=1):
                out[i] = out.get(i, 0.0) + w / (k + rank)
        return out

    return fuse


def _second_cosines(
    data: list[QueryData], workspace: Path, provider: str, cache: Path
) -> dict[int, np.ndarray[Any, Any]]:
    """Each query's cosine with every chunk under ``provider``'s model, the chunks embedded
    once and kept in ``cache`` (reused while it holds the same texts)."""
    queries = [_QUERY_TEXTS[id(q)] for q in data]
    if cache.is_file():
        with np.load(cache) as kept:
            if list(kept["texts"]) == _TEXTS and list(kept["query_texts"]) == queries:
                chunks, vectors = kept["chunks"], kept["queries"]
                return {id(q): chunks @ vectors[n] for n, q in enumerate(data)}
    settings = load_settings(workspace, overrides={"provider": provider})
    runtime = EmbeddingRuntime(settings, get_registry(), workspace)
    vectors = np.asarray(runtime.embed_queries(queries), dtype=np.float32)
    chunks = np.asarray(runtime.embed_documents(_TEXTS), dtype=np.float32)
    np.savez(cache, texts=_TEXTS, query_texts=queries, chunks=chunks, queries=vectors)
    return {id(q): chunks @ vectors[n] for n, q in enumerate(data)}


def second_model(wv: float, shift: float = 0.0) -> Fusion:
    """Weighted fusion, filled, with the second model's cosines in place of the index's,
    rescaled as ``(cosine - shift) / (1 - shift)`` (a model whose cosines sit in a narrow high
    band, as e5's do, otherwise outweighs the keyword side less than the weight says)."""
    first = weighted(wv, fill=True)

    def fuse(q: QueryData) -> dict[int, float]:
        return first(replace(q, cosine=(_SECOND[id(q)] - shift) / (1 - shift)))

    return fuse


def both_models(w_second: float, w_index: float) -> Fusion:
    """Three-way fusion: the second model's cosine, the index model's cosine and the keyword
    score (weight ``1 - w_second - w_index``) of every candidate either model or BM25 finds."""

    def fuse(q: QueryData) -> dict[int, float]:
        second = _SECOND[id(q)]
        kw = _relative(q.keyword)
        ids = {i for i, _ in _top_vector(q)} | set(kw)
        ids |= {int(i) for i in np.argpartition(-second, CANDIDATES)[:CANDIDATES]}
        w_kw = 1 - w_second - w_index
        return {
            i: w_second * float(second[i]) + w_index * float(q.cosine[i]) + w_kw * kw.get(i, 0.0)
            for i in ids
        }

    return fuse


def _content_words(text: str) -> list[str]:
    """``text``'s index tokens (:func:`memwell.retrieval.keywords.tokenize`) of three or more
    characters, stop words dropped."""
    return [w for w in tokenize(text) if len(w) > 2 and w not in ALL_STOPWORDS]


class _Feedback:
    """What keyword feedback needs of the corpus: each chunk's content words, their chunk
    frequencies, and the index to run expanded queries in (read-only)."""

    def __init__(self) -> None:
        self.words = [_content_words(text) for text in _TEXTS]
        self.df: Counter[str] = Counter()
        for words in self.words:
            self.df.update(set(words))
        self.conn = sqlite3.connect(f"file:{_INDEX[0]}?mode=ro", uri=True)
        self.bm25: dict[tuple[int, int, int], dict[int, float]] = {}

    def terms(self, q: QueryData, first: dict[int, float], top: int, count: int) -> list[str]:
        """The ``count`` words weighed highest in the first ranking's ``top`` chunks (each
        chunk's term frequency times its fused score times IDF), the query's own excluded."""
        total = len(self.words)
        asked = set(_content_words(_QUERY_TEXTS[id(q)]))
        weight: dict[str, float] = {}
        for i in sorted(first, key=lambda i: -first[i])[:top]:
            counts = Counter(self.words[i])
            length = sum(counts.values()) or 1
            for term, tf in counts.items():
                if term not in asked and self.df[term] <= total // 10:
                    gain = first[i] * tf / length * math.log(total / self.df[term])
                    weight[term] = weight.get(term, 0.0) + gain
        return sorted(weight, key=lambda term: -weight[term])[:count]

    def expanded(
        self, q: QueryData, first: dict[int, float], top: int, count: int
    ) -> dict[int, float]:
        """The BM25 magnitude of every chunk matching any expansion term (cached)."""
        key = (id(q), top, count)
        if key not in self.bm25:
            terms = self.terms(q, first, top, count)
            match = " OR ".join(fts_phrase(t) for t in terms)
            self.bm25[key] = _bm25_matches(self.conn, match, _POSITION) if terms else {}
        return self.bm25[key]


_FEEDBACK: list[_Feedback] = []


def keyword_feedback(top: int, count: int, beta: float, wv: float = 0.7) -> Fusion:
    """Keyword pseudo-relevance feedback (RM3-like): the ``count`` most telling words of the
    first fused ranking's ``top`` chunks are searched as one OR query, their BM25 added at
    ``beta`` to each chunk's exact BM25, then fused again (weighted ``wv``, filled)."""
    first = weighted(wv, fill=True)

    def fuse(q: QueryData) -> dict[int, float]:
        if not _FEEDBACK:
            _FEEDBACK.append(_Feedback())
        raw = dict(q.bm25)
        for i, s in _FEEDBACK[0].expanded(q, first(q), top, count).items():
            raw[i] = raw.get(i, 0.0) + beta * s
        ranked = sorted(raw, key=lambda i: -raw[i])[:CANDIDATES]
        return first(replace(q, keyword=[(i, raw[i]) for i in ranked]))

    return fuse


def _doc_ranking(scores: dict[int, float], docs: list[str]) -> list[str]:
    best: dict[str, float] = {}
    for i, s in scores.items():
        doc = docs[i]
        if s > best.get(doc, -1.0):
            best[doc] = s
    return sorted(best, key=lambda d: -best[d])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--dataset", type=Path, required=True)
    parser.add_argument("--split", default="train")
    parser.add_argument("--workdir", type=Path, help="the eval's --workdir, if it had one")
    parser.add_argument("--only", help="score only the variants whose name contains this")
    parser.add_argument("--second-provider", help="add rows with this provider's cosines")
    parser.add_argument(
        "--second-cache", type=Path, help="where the second provider's vectors are kept (.npz)"
    )
    args = parser.parse_args()
    started = time.perf_counter()
    data, docs = _collect(args.dataset, args.split, args.workdir)
    _DOCS[:] = docs
    _FILE_COSINES.update(_file_cosine_maps(data, docs))
    took = time.perf_counter() - started
    print(f"{len(data)} queries, {len(docs)} chunks, collected in {took:.0f} s")
    variants: dict[str, Fusion] = {
        "keyword only": weighted(0.0),
        "vector only": weighted(1.0),
    }
    for wv in (0.3, 0.4, 0.5, 0.6, 0.7, 0.8):
        variants[f"weighted {wv:.1f} (raw cosine)"] = weighted(wv)
    for wv in (0.3, 0.4, 0.5, 0.6, 0.7):
        variants[f"weighted {wv:.1f} (min-max cosine)"] = weighted(wv, "minmax")
    for wv in (0.3, 0.4, 0.5, 0.6, 0.7):
        variants[f"weighted {wv:.1f} (min-max, filled)"] = weighted(wv, "minmax", fill=True)
    for wv in (0.5, 0.6, 0.7):
        variants[f"weighted {wv:.1f} (raw, filled)"] = weighted(wv, fill=True)
    for wv in (0.5, 0.7):
        for gamma in (0.5, 1.0):
            variants[f"file evidence {wv:.1f} gamma {gamma} (raw)"] = file_evidence(wv, gamma)
            variants[f"file evidence {wv:.1f} gamma {gamma} (min-max)"] = file_evidence(
                wv, gamma, "minmax"
            )
    for wv in (0.5, 0.7):
        variants[f"rrf {wv:.1f}"] = rrf(wv)
    file_grid = [(0.7, 0.5), (0.7, 0.6), (0.7, 0.7), (0.75, 0.6), (0.75, 0.7)]
    file_grid += [(wv, fw) for wv in (0.75, 0.8, 0.85) for fw in (0.3, 0.4, 0.5)]
    for wv, file_weight in file_grid:
        variants[f"weighted {wv:.2f}, filled, file weight {file_weight}"] = file_mean(
            wv, file_weight
        )
    variants["weighted 0.75, filled, file weight 0.5"] = file_mean(0.75, 0.5)
    for above in (2, 3, 4):
        variants[f"weighted 0.75, filled, file weight 0.5 x min(1, {above}/chunks)"] = file_mean(
            0.75, 0.5, scale_above=above
        )
    for file_weight in (0.3, 0.5):
        variants[f"weighted 0.75, filled, file weight {file_weight}, max pooling"] = file_mean(
            0.75, file_weight, pool="max"
        )
    variants["weighted 0.7, filled, stop words stripped from the query vector"] = stripped_query(
        0.7
    )
    for wv in (0.7, 0.75):
        variants[f"weighted {wv:.2f}, both scores exact"] = exact_both(wv)
        for file_weight in (0.5, 0.7, 1.0):
            variants[f"weighted {wv:.2f}, both exact, file weight {file_weight}"] = exact_both(
                wv, file_weight
            )
            for low in (0.0, 0.7, 0.8, 0.9):
                variants[
                    f"weighted {wv:.2f}, both exact, file weight {file_weight} x coherence ramp "
                    f"from {low}"
                ] = exact_both(wv, file_weight, low)
    for wv in (0.7, 0.75):
        for top in (3, 5, 10):
            for beta in (0.3, 0.5, 1.0):
                variants[f"weighted {wv:.2f}, filled, vector feedback top {top} beta {beta}"] = (
                    vector_feedback(wv, top, beta)
                )
    for top in (3, 5):
        for count in (5, 10, 20):
            for beta in (0.1, 0.2, 0.4):
                variants[
                    f"weighted 0.70, filled, keyword feedback top {top} terms {count} beta {beta}"
                ] = keyword_feedback(top, count, beta)
    if args.second_provider:
        workspace = args.workdir or _default_workdir(args.dataset, "embedding")
        cache = args.second_cache or workspace / f"second-{args.second_provider}.npz"
        _SECOND.update(_second_cosines(data, workspace, args.second_provider, cache))
        name = args.second_provider
        variants[f"{name} only"] = second_model(1.0)
        for wv in (0.7, 0.8):
            variants[f"{name} weighted {wv:.1f}, filled"] = second_model(wv)
        for shift in (0.6, 0.7):
            variants[f"{name} shifted {shift}, weighted 0.7, filled"] = second_model(0.7, shift)
        grid = [(w2, wi) for w2 in (0.1, 0.2, 0.3, 0.4, 0.5) for wi in (0.3, 0.4, 0.5, 0.6)]
        for w_second, w_index in [(0.35, 0.35), *grid]:
            if w_second + w_index < 1:
                variants[f"{name} {w_second} + index model {w_index} + keyword"] = both_models(
                    w_second, w_index
                )
    print("| fusion | nDCG@10 | Recall@100 |")
    print("|---|---|---|")
    for name, fuse in variants.items():
        if args.only and args.only not in name and name != "weighted 0.7 (raw, filled)":
            continue
        ndcg, recall = [], []
        for q in data:
            ranking = _doc_ranking(fuse(q), docs)
            ndcg.append(ndcg_at_k(ranking, q.relevant, 10))
            recall.append(recall_at_k(ranking, q.relevant, 100))
        print(f"| {name} | {statistics.fmean(ndcg):.4f} | {statistics.fmean(recall):.4f} |")


if __name__ == "__main__":
    main()
