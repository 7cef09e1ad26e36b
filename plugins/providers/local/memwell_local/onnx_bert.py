"""The BERT forward pass on onnxruntime with int8 weights: the ``onnx-int8`` engine.

The graph is built in memory from the same safetensors weights the NumPy engine reads (see
:mod:`memwell_local.onnx_proto`): three of the four dense products of each layer (query-key-
value, attention output, FFN input) run as onnxruntime's ``DynamicQuantizeMatMul`` (int8
weights, quantized per output column here with NumPy; the activations are quantized per
product at run time), the FFN output product and everything else in float32. The token
embeddings are looked up in NumPy, so the 47 MB table stays memory-mapped and out of the graph.

Only document calls of at least :data:`ONNX_MIN_TEXTS` texts (an index build) run on it; a
query or a few edited chunks run the NumPy engine's float32 pass, so a short-lived process
never pays onnxruntime's import and the graph's build (about 0.5 s on a quiet machine).
Nothing is downloaded and nothing is written to disk.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any

import numpy as np

from . import onnx_proto as pb
from .bert_kernels import Array
from .numpy_bert import Hidden, NumpyBertEncoder

#: The engine's name in ``[providers.local] engine``.
ONNX_INT8 = "onnx-int8"
#: Its identity in the index's provider key: bump it when the graph or the quantization
#: changes, so indexes embedded by an older graph are rebuilt rather than mixed.
ONNX_INT8_VERSION = "onnx-int8-2"
#: Largest magnitude of a quantized weight. The full int8 range: 7 bits (onnxruntime's
#: ``reduce_range``, which avoids int16 saturation on x86 CPUs without VNNI) moved vectors
#: twice as far from the float32 ones (cosine mean 0.9937 against 0.9950 on SciFact texts).
INT8_WEIGHT_MAX = 127
#: Texts in one call from which it runs on onnxruntime: an index build's groups (64 chunks)
#: do, a query or a one-file edit (a few chunks) does not.
ONNX_MIN_TEXTS = 16
_MS = "com.microsoft"


def quantize_columns(weight: Array) -> tuple[np.ndarray[Any, np.dtype[np.int8]], Array]:
    """``weight`` (out, in) as its transpose in int8 with one scale per output column."""
    columns = np.ascontiguousarray(weight.T, dtype=np.float32)
    scale = np.abs(columns).max(axis=0) / np.float32(INT8_WEIGHT_MAX)
    scale = np.where(scale > 0, scale, np.float32(1.0)).astype(np.float32)
    quantized = np.rint(columns / scale).astype(np.int8)
    return quantized, scale


def bert_graph(weights: dict[str, Array], layers: int, heads: int, eps: float) -> bytes:
    """A serialised ONNX model: ``embedded`` (batch, seq, width) float32, the sum of each
    token's word, position and type embeddings, and ``mask_bias`` (batch, 1, 1, seq) float32
    (0 for a token, a large negative number for padding) to the last layer's ``hidden``
    (batch, seq, width). ``weights`` are the NumPy engine's prepared weights (fused,
    pre-scaled query-key-value projections)."""
    hidden = len(weights["embeddings.LayerNorm.weight"])
    nodes: list[bytes] = []
    inits: list[bytes] = []

    def const(name: str, array: np.ndarray[Any, Any]) -> str:
        inits.append(pb.tensor(name, array))
        return name

    def dense(x: str, name: str, out: str, int8: bool = True) -> str:
        if not int8:
            weight = const(f"{name}.t", np.ascontiguousarray(weights[f"{name}.weight"].T))
            nodes.append(pb.node("MatMul", [x, weight], [out + "_product"]))
            nodes.append(
                pb.node(
                    "Add", [out + "_product", const(f"{name}.bias", weights[f"{name}.bias"])], [out]
                )
            )
            return out
        quantized, scale = quantize_columns(weights[f"{name}.weight"])
        args = [
            x,
            const(f"{name}.q", quantized),
            const(f"{name}.scale", scale),
            const(f"{name}.zero", np.zeros(len(scale), dtype=np.int8)),
            const(f"{name}.bias", weights[f"{name}.bias"]),
        ]
        nodes.append(pb.node("DynamicQuantizeMatMul", args, [out], _MS))
        return out

    def norm(x: str, skip: str | None, name: str, out: str) -> str:
        args = [x, *([skip] if skip else []), f"{name}.w", f"{name}.b"]
        const(args[-2], weights[f"{name}.weight"])
        const(args[-1], weights[f"{name}.bias"])
        if skip is None:
            nodes.append(pb.node("LayerNormalization", args, [out], axis=-1, epsilon=eps))
        else:
            nodes.append(pb.node("SkipLayerNormalization", args, [out], _MS, epsilon=eps))
        return out

    x = norm("embedded", None, "embeddings.LayerNorm", "x0")
    split = const("split_shape", np.array([0, 0, heads, hidden // heads], dtype=np.int64))
    merge = const("merge_shape", np.array([0, 0, hidden], dtype=np.int64))
    for i in range(layers):
        p, t = f"encoder.layer.{i}", f"l{i}_"
        q, k, v = t + "q", t + "k", t + "v"
        nodes.append(
            pb.node("Split", [dense(x, f"{p}.attention.self.qkv", t + "qkv")], [q, k, v], axis=-1)
        )
        for part, perm in ((q, (0, 2, 1, 3)), (k, (0, 2, 3, 1)), (v, (0, 2, 1, 3))):
            nodes.append(pb.node("Reshape", [part, split], [part + "_heads"]))
            nodes.append(pb.node("Transpose", [part + "_heads"], [part + "_t"], perm=perm))
        nodes += [
            pb.node("MatMul", [q + "_t", k + "_t"], [t + "scores"]),
            pb.node("Add", [t + "scores", "mask_bias"], [t + "masked"]),
            pb.node("Softmax", [t + "masked"], [t + "probs"], axis=-1),
            pb.node("MatMul", [t + "probs", v + "_t"], [t + "context_heads"]),
            pb.node("Transpose", [t + "context_heads"], [t + "context_t"], perm=(0, 2, 1, 3)),
            pb.node("Reshape", [t + "context_t", merge], [t + "context"]),
        ]
        attended = dense(t + "context", f"{p}.attention.output.dense", t + "attended")
        x = norm(attended, x, f"{p}.attention.output.LayerNorm", t + "x1")
        nodes.append(
            pb.node("Gelu", [dense(x, f"{p}.intermediate.dense", t + "inner")], [t + "gelu"], _MS)
        )
        # The FFN output product stays float32: its GELU inputs have the widest range, and
        # in int8 it moved LoCoMo dev R@1 from 0.7505 to 0.7475 (docs/quality.md); in float32
        # every development set stays within noise, for 1.47x instead of 1.84x less CPU.
        out = dense(t + "gelu", f"{p}.output.dense", t + "out", int8=False)
        x = norm(out, x, f"{p}.output.LayerNorm", t + "x2")
    nodes.append(pb.node("Identity", [x], ["hidden"]))
    inputs = [
        pb.value_info("embedded", np.float32, ["batch", "seq", hidden]),
        pb.value_info("mask_bias", np.float32, ["batch", 1, 1, "seq"]),
    ]
    outputs = [pb.value_info("hidden", np.float32, ["batch", "seq", hidden])]
    return pb.model(nodes, inits, inputs, outputs, {"": 17, _MS: 1})


class OnnxBertEncoder(NumpyBertEncoder):
    """The NumPy engine, with document calls of :data:`ONNX_MIN_TEXTS` texts or more run on
    an onnxruntime session of int8 weights (built on the first such call)."""

    def __init__(
        self,
        weights: dict[str, Array],
        tokenizer: Any,
        config: dict[str, Any],
        normalize: bool,
        lowercase: bool = False,
        threads: int = 1,
    ) -> None:
        super().__init__(weights, tokenizer, config, normalize, lowercase)
        self._threads = threads
        self._session: Any = None
        self._session_lock = threading.Lock()

    def _pass_for(self, texts: int) -> Hidden:
        if texts < ONNX_MIN_TEXTS:
            return self._hidden
        with self._session_lock:
            if self._session is None:
                self._session = self._build_session()
        return self._int8_hidden

    def _build_session(self) -> Any:
        import onnxruntime as ort

        options = ort.SessionOptions()
        options.intra_op_num_threads = self._threads
        options.inter_op_num_threads = 1
        # Threads that wait for work sleep: spinning burns the cores other workers need.
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        options.log_severity_level = 3
        graph = bert_graph(self._w, self._layers, self._heads, self._eps)
        return ort.InferenceSession(graph, options, providers=["CPUExecutionProvider"])

    def _int8_hidden(self, sequences: Sequence[Array]) -> Array:
        """:meth:`_hidden` on the int8 session: the sequences padded to the longest."""
        w = self._w
        lengths = np.asarray([len(ids) for ids in sequences])
        width = int(lengths.max())
        keep = np.arange(width)[None, :] < lengths[:, None]
        ids = np.zeros(keep.shape, dtype=np.int64)
        ids[keep] = np.concatenate(sequences)
        embedded = w["embeddings.word_embeddings.weight"][ids]
        embedded += w["embeddings.position_embeddings.weight"][:width]
        embedded += w["embeddings.token_type_embeddings.weight"][0]
        bias = np.where(keep, np.float32(0), np.float32(-1e9)).astype(np.float32)
        (out,) = self._session.run(
            ["hidden"], {"embedded": embedded, "mask_bias": bias[:, None, None, :]}
        )
        packed: Array = np.asarray(out)[keep]
        return packed
