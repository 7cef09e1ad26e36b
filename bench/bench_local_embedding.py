"""Local document embedding (issues 16, 22, 45): the NumPy and int8 engines against torch.

Embeds the same generated chunks with memwell-local's NumPy forward pass (its defaults, and a
few other worker, BLAS-thread and batch settings), its ``onnx-int8`` engine (when onnxruntime
is installed) and with sentence-transformers on torch (its
batch size 8, on one thread and on torch's default threads), in one run. The engines take
turns, round after round, so load drift on a shared machine lands on all of them; each row
prints the median over the rounds of wall seconds and of process CPU seconds (every thread's),
chunks per second and per CPU-second, the CPU rate against sentence-transformers on one
thread, and the largest difference from (and the lowest cosine with) sentence-transformers'
vectors. Needs the ``torch``
extra (sentence-transformers) for the comparison rows.

    python bench/bench_local_embedding.py [--chunks 150] [--rounds 3]
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from corpus import generate
from memwell_local import LocalConfig, SentenceTransformerProvider
from memwell_local.provider import resolve_model_source

MODEL = "all-MiniLM-L6-v2"
#: The row every CPU rate is compared with.
REFERENCE = "sentence-transformers (torch), batch 8, 1 thread"


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


@dataclass
class Engine:
    """One row: a provider and its measurements, one per round."""

    name: str
    provider: SentenceTransformerProvider
    wall: list[float] = field(default_factory=list)
    cpu: list[float] = field(default_factory=list)
    matrix: np.ndarray | None = None

    def run(self, texts: list[str]) -> None:
        wall, cpu = time.perf_counter(), time.process_time()
        self.matrix = self.provider.embed_batch(texts)
        self.cpu.append(time.process_time() - cpu)
        self.wall.append(time.perf_counter() - wall)


def engines(source: str) -> list[Engine]:
    """torch rows first: ``threads`` sets torch's threads for the whole process when its
    model loads, so the default-threads row must load before the one-thread row."""
    rows = [
        ("sentence-transformers (torch), batch 8, default threads", LocalConfig(engine="torch")),
        (REFERENCE, LocalConfig(engine="torch", threads=1)),
        ("NumPy, defaults (2 workers x 1 BLAS thread, 1024 tokens/pass)", LocalConfig()),
        ("NumPy, 1 worker x 1 BLAS thread", LocalConfig(workers=1, threads=1)),
        ("NumPy, 2 workers, 512 tokens/pass", LocalConfig(batch_tokens=512)),
        ("NumPy, 2 workers, 2048 tokens/pass", LocalConfig(batch_tokens=2048)),
    ]
    if importlib.util.find_spec("onnxruntime") is not None:
        rows += [
            ("onnx-int8, defaults (2 workers x 1 thread)", LocalConfig(engine="onnx-int8")),
            ("onnx-int8, 1 worker x 1 thread", LocalConfig(engine="onnx-int8", workers=1)),
        ]
    return [Engine(name, SentenceTransformerProvider(MODEL, source, cfg)) for name, cfg in rows]


def commit() -> str:
    try:
        out = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=True
        )
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return out.stdout.strip()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chunks", type=int, default=150)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    texts = chunks(args.chunks)
    source = resolve_model_source(MODEL, None, Path.cwd())
    rows = engines(source)
    for engine in rows:
        engine.provider.embed_batch(texts[:8])  # load weights / warm up
    limit = rows[0].provider.max_input_tokens
    tokens = sum(len(ids) for ids in tokenized(source, texts, limit))
    stamp = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    print(f"{stamp}, commit {commit()}, {len(texts)} chunks ({tokens / len(texts):.0f} tokens")
    print(f"on average), {args.rounds} rounds, load {load()} at the start", flush=True)
    for index in range(args.rounds):
        for engine in rows:
            engine.run(texts)
        print(f"round {index + 1} done, load {load()}", flush=True)
    reference = next(e for e in rows if e.name == REFERENCE)
    expected = reference.matrix
    assert expected is not None
    print(
        "| engine | wall s | CPU s | chunks/s | chunks/CPU-s | CPU rate vs ST 1 thread "
        "| max diff | min cosine |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for engine in rows:
        wall, cpu = statistics.median(engine.wall), statistics.median(engine.cpu)
        ratio = statistics.median(reference.cpu) / cpu
        assert engine.matrix is not None
        diff = float(np.max(np.abs(engine.matrix - expected)))
        cosine = float(np.min(np.sum(engine.matrix * expected, axis=1)))
        print(
            f"| {engine.name} | {wall:.2f} | {cpu:.2f} | {len(texts) / wall:.1f} | "
            f"{len(texts) / cpu:.1f} | {ratio:.2f}x | {diff:.1e} | {cosine:.4f} |"
        )
    print(f"load {load()} at the end")


def load() -> str:
    return "/".join(f"{v:.1f}" for v in os.getloadavg())


def tokenized(source: str, texts: list[str], limit: int | None) -> list[list[int]]:
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_file(str(Path(source) / "tokenizer.json"))
    if limit is not None:
        tokenizer.enable_truncation(limit)
    return [e.ids for e in tokenizer.encode_batch(texts)]


if __name__ == "__main__":
    main()
