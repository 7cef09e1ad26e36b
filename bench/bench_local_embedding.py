"""Local document embedding (issue 16): the NumPy engine against sentence-transformers.

Embeds the same generated chunks with memwell-local's NumPy forward pass (a few batch sizes
and BLAS thread counts) and with sentence-transformers on torch (its batch size 8 and its
default threads), in one run, and prints throughput and the largest difference between the
vectors. Needs the ``torch`` extra (sentence-transformers) for the comparison rows.

    python bench/bench_local_embedding.py [--chunks 200]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from corpus import generate
from memwell_local import LocalConfig, SentenceTransformerProvider
from memwell_local.provider import resolve_model_source


def chunks(count: int) -> list[str]:
    """Paragraph-sized texts like the indexer's chunks (generated, deterministic)."""
    import tempfile

    from memwell.retrieval.chunking import chunk_markdown

    with tempfile.TemporaryDirectory() as tmp:
        generate(Path(tmp), max(1, count // 3))
        texts = [
            c.text
            for path in sorted(Path(tmp).rglob("*.md"))
            for c in chunk_markdown(path.read_text(), tokens=256, overlap=50)
        ]
    return texts[:count]


def timed(provider: SentenceTransformerProvider, texts: list[str]) -> tuple[float, Any]:
    provider.embed_batch(texts[:8])  # load weights / warm up
    start = time.perf_counter()
    matrix = provider.embed_batch(texts)
    return time.perf_counter() - start, matrix


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chunks", type=int, default=200)
    args = parser.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    texts = chunks(args.chunks)
    source = resolve_model_source("all-MiniLM-L6-v2", None, Path.cwd())
    model = "all-MiniLM-L6-v2"
    print(f"{len(texts)} chunks, load {os.getloadavg()[0]:.1f} at the start")
    print("| engine | seconds | chunks/s | vs sentence-transformers | max abs diff |")
    print("|---|---|---|---|---|", flush=True)
    reference_seconds, reference = timed(
        SentenceTransformerProvider(model, source, LocalConfig(engine="torch")), texts
    )
    row("sentence-transformers (torch), batch 8", reference_seconds, reference_seconds, 0.0, texts)
    for batch_tokens, threads in ((1024, 1), (1024, 2), (512, 1), (2048, 1), (4096, 1)):
        config = LocalConfig(batch_tokens=batch_tokens, threads=threads)
        seconds, matrix = timed(SentenceTransformerProvider(model, source, config), texts)
        diff = float(np.max(np.abs(matrix - reference)))
        name = f"NumPy, {batch_tokens} tokens/pass, {threads} BLAS threads"
        row(name, seconds, reference_seconds, diff, texts)
    print(f"load {os.getloadavg()[0]:.1f} at the end")


def row(name: str, seconds: float, reference: float, diff: float, texts: list[str]) -> None:
    rate, speed = len(texts) / seconds, reference / seconds
    print(f"| {name} | {seconds:.2f} | {rate:.1f} | {speed:.2f}x | {diff:.1e} |", flush=True)


if __name__ == "__main__":
    main()
