"""A NumPy forward pass for BERT sentence-transformers models: embeddings without torch.

torch is most of a 2 GB install, and importing it and sentence-transformers takes about 5 s.
A plain NumPy forward pass over the same safetensors weights (all-MiniLM-L6-v2: 6 layers, 384
wide) embeds a query in milliseconds after a 0.1 s import, and documents in batches: texts
are sorted by length and packed into one matrix of tokens (no padding), so the dense layers
run as large matrix products and attention runs per text. A query's dozen tokens run on
query-blocked copies of the weights instead (see :func:`query_blocks`). It applies only to
the layout it was written for (a ``bert`` encoder with absolute positions and GELU, mean
pooling, optional normalisation); anything else uses sentence-transformers (memwell-local's
``torch`` extra).
"""

from __future__ import annotations

import itertools
import json
import math
import mmap
import struct
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, TypeVar

import numpy as np
from memwell.plugin import Matrix
from memwell.plugin_sdk import blas_threads

from .bert_kernels import Array, gelu, layer_norm, packed_attention

_TRANSFORMER = "sentence_transformers.models.Transformer"
_POOLING = "sentence_transformers.models.Pooling"
_NORMALIZE = "sentence_transformers.models.Normalize"


def _read_json(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))


def _lowercases(model_dir: Path) -> bool:
    """sentence-transformers' own ``do_lower_case`` (applied before the tokenizer)."""
    try:
        data = _read_json(model_dir / "sentence_bert_config.json")
    except (OSError, ValueError):
        return False
    return bool(isinstance(data, dict) and data.get("do_lower_case"))


def _supported(model_dir: Path) -> tuple[dict[str, Any], bool] | None:
    """(BERT config, normalise?) when ``model_dir`` has the supported layout, else ``None``."""
    try:
        modules = _read_json(model_dir / "modules.json")
        config = _read_json(model_dir / "config.json")
    except (OSError, ValueError):
        return None
    if not isinstance(modules, list) or not isinstance(config, dict):
        return None
    types = [m.get("type") for m in modules if isinstance(m, dict)]
    if types not in ([_TRANSFORMER, _POOLING], [_TRANSFORMER, _POOLING, _NORMALIZE]):
        return None
    if modules[0].get("path") not in ("", None):
        return None
    try:
        pooling = _read_json(model_dir / str(modules[1].get("path", "")) / "config.json")
    except (OSError, ValueError):
        return None
    modes = {k: v for k, v in pooling.items() if k.startswith("pooling_mode_") and v}
    if modes != {"pooling_mode_mean_tokens": True}:
        return None
    plain_bert = (
        config.get("model_type") == "bert"
        and config.get("hidden_act") == "gelu"
        and config.get("position_embedding_type", "absolute") == "absolute"
    )
    files = all((model_dir / f).is_file() for f in ("model.safetensors", "tokenizer.json"))
    if not (plain_bert and files):
        return None
    return config, len(types) == 3


def numpy_bert_dims(model_dir: Path) -> int | None:
    """The vector size of a supported model, read from its config; ``None`` otherwise."""
    found = _supported(model_dir) if model_dir.is_dir() else None
    return int(found[0]["hidden_size"]) if found is not None else None


#: safetensors dtype names NumPy reads directly (little-endian).
_SAFETENSORS_DTYPES = {"F32": "<f4", "F16": "<f2", "F64": "<f8", "I64": "<i8", "I32": "<i4"}


def mapped_safetensors(path: Path) -> dict[str, Array] | None:
    """The tensors of a safetensors file as read-only arrays over one memory map: nothing is
    read or copied up front (a query touches a dozen rows of the 47 MB word-embedding table);
    ``None`` when a tensor has a dtype NumPy cannot view (bfloat16)."""
    with path.open("rb") as handle:
        mapped = mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ)
    (length,) = struct.unpack("<Q", mapped[:8])
    header = json.loads(mapped[8 : 8 + length])
    tensors: dict[str, Array] = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        code = _SAFETENSORS_DTYPES.get(info["dtype"])
        if code is None:
            return None
        dtype = np.dtype(code)
        start, end = info["data_offsets"]
        array = np.frombuffer(
            mapped, dtype=dtype, count=(end - start) // dtype.itemsize, offset=8 + length + start
        )
        tensors[name] = array.reshape(info["shape"])
    return tensors


def _prepared(weights: dict[str, Array], layers: int, heads: int) -> dict[str, Array]:
    """float32 weights, with each layer's query, key and value projections fused into one
    (``attention.self.qkv``: one product instead of three) and the query projection scaled
    by attention's ``1 / sqrt(head size)`` (n x head multiplications instead of n x n)."""
    out = {k: v if v.dtype == np.float32 else v.astype(np.float32) for k, v in weights.items()}
    for i in range(layers):
        prefix = f"encoder.layer.{i}.attention.self"
        scale = np.float32(1.0 / math.sqrt(len(out[f"{prefix}.query.bias"]) // heads))
        parts = [f"{prefix}.{m}" for m in ("query", "key", "value")]
        for kind in ("weight", "bias"):
            query, key, value = (out.pop(f"{p}.{kind}") for p in parts)
            out[f"{prefix}.qkv.{kind}"] = np.concatenate([query * scale, key, value])
    return out


#: Token rows up to which a dense product runs on the query-blocked weights: measured here
#: (one BLAS thread, 24 products of MiniLM's sizes) 2.4x faster than the stored layout at 15
#: rows, break-even near 100 and 1.5x slower at 1,024 (a document batch).
SMALL_ROWS = 64
#: Output features per block of the query-blocked weights.
BLOCK = 32


def query_blocks(weight: Array) -> Array | None:
    """``weight`` (out, in) as contiguous ``(out / BLOCK, in, BLOCK)`` blocks of its transpose.

    ``x @ blocks`` is then a stack of small products that BLAS runs without repacking the
    weights: for a query (a dozen rows) the stored ``(out, in)`` layout spends most of its time
    packing 42 MB of weights per query. The results match the stored layout's to rounding
    (measured: bitwise for MiniLM's 384-wide inputs, a whole vector within 3e-7). ``None``
    when ``out`` is not a multiple of :data:`BLOCK`.
    """
    rows, cols = weight.shape
    if rows % BLOCK:
        return None
    return np.ascontiguousarray(weight.reshape(rows // BLOCK, BLOCK, cols).transpose(0, 2, 1))


_Encoder = TypeVar("_Encoder", bound="NumpyBertEncoder")
#: A forward pass: token-id sequences to their last layer's token vectors, packed.
Hidden = Callable[[Sequence[Array]], Array]


class NumpyBertEncoder:
    """Embeds texts exactly as sentence-transformers does for a BERT + mean-pooling model.

    The second forward pass of at most :data:`SMALL_ROWS` tokens (the first query after a
    warm-up, or a one-shot process's second) builds the query-blocked weights once: about 43 MB
    more memory and 25-45 ms, which a process that asks one query never pays.
    """

    def __init__(
        self,
        weights: dict[str, Array],
        tokenizer: Any,
        config: dict[str, Any],
        normalize: bool,
        lowercase: bool = False,
    ) -> None:
        self._lowercase = lowercase
        self._layers = int(config["num_hidden_layers"])
        self._heads = int(config["num_attention_heads"])
        self._w = _prepared(weights, self._layers, self._heads)
        self._tokenizer = tokenizer
        self._eps = float(config.get("layer_norm_eps", 1e-12))
        self._normalize = normalize
        self.dims = int(config["hidden_size"])
        self._blocks: dict[str, Array] = {}
        self._small_passes = 0
        self._blocks_lock = threading.Lock()

    @classmethod
    def load(
        cls: type[_Encoder], model_dir: Path, max_seq_length: int | None, **options: Any
    ) -> _Encoder | None:
        """The encoder for ``model_dir``, or ``None`` when its layout is not supported or the
        truncation length (``max_seq_length``) is unknown; ``options`` go to the constructor."""
        found = _supported(model_dir)
        if found is None or max_seq_length is None:
            return None
        config, normalize = found
        try:
            from tokenizers import Tokenizer
        except ImportError:
            return None
        raw = mapped_safetensors(model_dir / "model.safetensors")
        if raw is None:
            return None
        weights = {k.removeprefix("bert."): v for k, v in raw.items()}
        tokenizer = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
        tokenizer.no_padding()
        limit = min(max_seq_length, int(config.get("max_position_embeddings", 512)))
        tokenizer.enable_truncation(limit)
        return cls(weights, tokenizer, config, normalize, _lowercases(model_dir), **options)

    def _dense_names(self) -> list[str]:
        return [
            f"encoder.layer.{i}.{part}"
            for i in range(self._layers)
            for part in (
                "attention.self.qkv",
                "attention.output.dense",
                "intermediate.dense",
                "output.dense",
            )
        ]

    def _count_small_pass(self) -> None:
        """Build the query-blocked weights on the second small forward pass."""
        with self._blocks_lock:
            self._small_passes += 1
            if self._small_passes == 2:
                self._build_blocks()

    def _build_blocks(self) -> None:
        if self._blocks:
            return
        blocks = {}
        for name in self._dense_names():
            found = query_blocks(self._w[f"{name}.weight"])
            if found is not None:
                blocks[name] = found
        self._blocks = blocks

    def prepare_queries(self) -> None:
        """Build the query-blocked weights now (a session's warm-up), not on the second query."""
        with self._blocks_lock:
            self._build_blocks()

    def _dense(self, x: Array, name: str) -> Array:
        weight = self._w[f"{name}.weight"]
        blocks = self._blocks.get(name) if len(x) <= SMALL_ROWS else None
        if blocks is not None:
            count, _, width = blocks.shape
            out = np.empty((len(x), count, width), dtype=np.float32)
            np.matmul(x, blocks, out=out.transpose(1, 0, 2))
            out = out.reshape(len(x), count * width)
        elif len(x) <= SMALL_ROWS:
            # W @ x.T multiplies the stored (out, in) matrix as it is: against its transposed
            # view (x @ W.T) BLAS took 1.5x as long for a query's dozen rows (measured here:
            # 409 against 279 us for 12 x 384 by 384 x 1536), and no transposed copy is made.
            # The row-major copy keeps the row sums of layer norm in the order a document
            # batch uses: a text's vector does not depend on the batch it ran in.
            out = np.ascontiguousarray((weight @ x.T).T)
        else:
            # A document batch: as fast either way (measured: 1,024 rows, ~95 GFLOP/s), and
            # x @ W.T gives row-major output, which the row-wise steps after it read in order.
            out = x @ weight.T
        out += self._w[f"{name}.bias"]
        return out

    def _norm(self, x: Array, name: str) -> Array:
        return layer_norm(x, self._w[f"{name}.weight"], self._w[f"{name}.bias"], self._eps)

    def _forward(self, sequences: Sequence[Array], hidden: Hidden | None = None) -> Array:
        """Pooled vectors of token-id sequences, all packed into one matrix of tokens.

        The dense layers (most of the work) run once over every token of the batch, so a
        bigger batch means bigger matrix products; attention runs per sequence. ``hidden``
        computes the last layer's token vectors (default: this NumPy forward pass).
        """
        lengths = [len(ids) for ids in sequences]
        x = (hidden or self._hidden)(sequences)
        bounds = np.cumsum([0, *lengths[:-1]])
        pooled: Array = (np.add.reduceat(x, bounds, axis=0) / np.asarray(lengths)[:, None]).astype(
            np.float32
        )
        if self._normalize:
            norms = np.maximum(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12)
            pooled = (pooled / norms).astype(np.float32)
        return pooled

    def token_vectors(self, texts: Sequence[str]) -> list[Array]:
        """Each text's contextual token vectors (one L2-normalised row per token, the
        ``[CLS]`` and ``[SEP]`` markers included): what late interaction compares."""
        sequences = self._token_ids(texts)
        if not sequences:
            return []
        x = self._hidden(sequences)
        x = x / np.maximum(np.linalg.norm(x, axis=1, keepdims=True), 1e-12)
        bounds = np.cumsum([0, *(len(ids) for ids in sequences)])
        return [x[a:b].astype(np.float32) for a, b in itertools.pairwise(bounds)]

    def _hidden(self, sequences: Sequence[Array]) -> Array:
        """The last layer's token vectors of ``sequences``, packed one after the other."""
        w = self._w
        lengths = [len(ids) for ids in sequences]
        if sum(lengths) <= SMALL_ROWS and len(self._blocks) == 0:
            self._count_small_pass()
        ids = np.concatenate(sequences)
        positions = np.concatenate([np.arange(n) for n in lengths])
        x: Array = w["embeddings.word_embeddings.weight"][ids]
        x += w["embeddings.position_embeddings.weight"][positions]
        x += w["embeddings.token_type_embeddings.weight"][0]
        x = self._norm(x, "embeddings.LayerNorm")
        for i in range(self._layers):
            p = f"encoder.layer.{i}"
            qkv = self._dense(x, f"{p}.attention.self.qkv")
            context = packed_attention(qkv, lengths, self._heads)
            attended = self._dense(context, f"{p}.attention.output.dense")
            attended += x
            x = self._norm(attended, f"{p}.attention.output.LayerNorm")
            inner = gelu(self._dense(x, f"{p}.intermediate.dense"))
            out = self._dense(inner, f"{p}.output.dense")
            out += x
            x = self._norm(out, f"{p}.output.LayerNorm")
        return x

    def _token_ids(self, texts: Sequence[str]) -> list[Array]:
        if self._lowercase:
            texts = [t.lower() for t in texts]
        return [
            np.asarray(e.ids, dtype=np.int64) for e in self._tokenizer.encode_batch(list(texts))
        ]

    def _pass_for(self, texts: int) -> Hidden:
        """The forward pass that embeds a call of ``texts`` texts (here always NumPy's)."""
        return self._hidden

    def encode(
        self,
        texts: Sequence[str],
        *,
        batch_tokens: int = 1024,
        threads: int | None = 1,
        workers: int = 1,
    ) -> Matrix:
        """One row per text, in order.

        Texts are sorted by length and packed into batches of about ``batch_tokens`` tokens;
        ``threads`` caps the BLAS threads (``None``: the library's default). ``workers``
        batches run at once, each on its own Python thread (NumPy releases the GIL in its
        products): with one BLAS thread each, the cores are used without BLAS threads that
        spin-wait for each other when other processes hold the cores.
        """
        if not texts:
            return np.zeros((0, self.dims), dtype=np.float32)
        sequences = self._token_ids(texts)
        order = sorted(range(len(sequences)), key=lambda i: len(sequences[i]))
        batches: list[list[int]] = [[]]
        tokens = 0
        for index in order:
            size = len(sequences[index])
            if batches[-1] and tokens + size > batch_tokens:
                batches.append([])
                tokens = 0
            batches[-1].append(index)
            tokens += size
        out = np.empty((len(sequences), self.dims), dtype=np.float32)

        hidden = self._pass_for(len(sequences))

        def run(batch: list[int]) -> None:
            out[batch] = self._forward([sequences[i] for i in batch], hidden)

        with blas_threads(threads):
            if workers <= 1 or len(batches) == 1:
                for batch in batches:
                    run(batch)
            else:
                with ThreadPoolExecutor(workers, thread_name_prefix="memwell-embed") as pool:
                    list(pool.map(run, batches))
        return out
