"""A NumPy forward pass for BERT sentence-transformers models, for queries without torch.

Importing torch and sentence-transformers takes about 5 s, which is most of a one-shot
``memwell search``. A query is a few dozen tokens, so a plain NumPy forward pass over the same
safetensors weights (all-MiniLM-L6-v2: 6 layers, 384 wide) embeds it in milliseconds after a
0.1 s import. It applies only to the layout it was written for (a ``bert`` encoder with
absolute positions and GELU, mean pooling, optional normalisation); anything else keeps using
sentence-transformers. Documents are still embedded by sentence-transformers in batches.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from memwell.blas import single_blas_thread
from memwell.embeddings import Matrix

Array = np.ndarray[Any, np.dtype[np.float32]]

_TRANSFORMER = "sentence_transformers.models.Transformer"
_POOLING = "sentence_transformers.models.Pooling"
_NORMALIZE = "sentence_transformers.models.Normalize"


def _read_json(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))


#: Numerical Recipes' erfc fit: erfc(z) = t * exp(-z^2 + P(t)), t = 1 / (1 + z / 2).
_ERFC_COEFFS = (
    -1.26551223,
    1.00002368,
    0.37409196,
    0.09678418,
    -0.18628806,
    0.27886807,
    -1.13520398,
    1.48851587,
    -0.82215223,
    0.17087277,
)


def _erf(x: Array) -> Array:
    """erf with a relative error under 1.2e-7 (NumPy has no erf of its own)."""
    z = np.abs(x)
    t = 1.0 / (1.0 + 0.5 * z)
    poly = np.zeros_like(z)
    for coeff in reversed(_ERFC_COEFFS):  # Horner: c0 + t * (c1 + t * (...))
        poly = poly * t + coeff
    erfc = t * np.exp(-z * z + poly)
    out: Array = np.where(x >= 0, 1.0 - erfc, erfc - 1.0).astype(np.float32)
    return out


def _gelu(x: Array) -> Array:
    return (0.5 * x * (1.0 + _erf(x / math.sqrt(2.0)))).astype(np.float32)


def _layer_norm(x: Array, weight: Array, bias: Array, eps: float) -> Array:
    mean = x.mean(axis=-1, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=-1, keepdims=True)
    out: Array = ((x - mean) / np.sqrt(var + eps) * weight + bias).astype(np.float32)
    return out


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


class NumpyBertEncoder:
    """Embeds texts exactly as sentence-transformers does for a BERT + mean-pooling model."""

    def __init__(
        self,
        weights: dict[str, Array],
        tokenizer: Any,
        config: dict[str, Any],
        normalize: bool,
        lowercase: bool = False,
    ) -> None:
        self._lowercase = lowercase
        self._w = weights
        self._tokenizer = tokenizer
        self._layers = int(config["num_hidden_layers"])
        self._heads = int(config["num_attention_heads"])
        self._eps = float(config.get("layer_norm_eps", 1e-12))
        self._normalize = normalize
        self.dims = int(config["hidden_size"])

    @classmethod
    def load(cls, model_dir: Path, max_seq_length: int | None) -> NumpyBertEncoder | None:
        """The encoder for ``model_dir``, or ``None`` when its layout is not supported or the
        truncation length (``max_seq_length``) is unknown."""
        found = _supported(model_dir)
        if found is None or max_seq_length is None:
            return None
        config, normalize = found
        try:
            from safetensors.numpy import load_file
            from tokenizers import Tokenizer
        except ImportError:
            return None
        raw = load_file(str(model_dir / "model.safetensors"))
        weights = {k.removeprefix("bert."): v.astype(np.float32) for k, v in raw.items()}
        tokenizer = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
        tokenizer.no_padding()
        limit = min(max_seq_length, int(config.get("max_position_embeddings", 512)))
        tokenizer.enable_truncation(limit)
        return cls(weights, tokenizer, config, normalize, _lowercases(model_dir))

    def _dense(self, x: Array, name: str) -> Array:
        out: Array = x @ self._w[f"{name}.weight"].T + self._w[f"{name}.bias"]
        return out

    def _norm(self, x: Array, name: str) -> Array:
        return _layer_norm(x, self._w[f"{name}.weight"], self._w[f"{name}.bias"], self._eps)

    def _embed_one(self, text: str) -> Array:
        if self._lowercase:
            text = text.lower()
        ids = np.asarray(self._tokenizer.encode(text).ids, dtype=np.int64)
        w = self._w
        x = (
            w["embeddings.word_embeddings.weight"][ids]
            + w["embeddings.position_embeddings.weight"][: len(ids)]
            + w["embeddings.token_type_embeddings.weight"][0]
        )
        x = self._norm(x, "embeddings.LayerNorm")
        n, hidden = x.shape
        head = hidden // self._heads
        scale = np.float32(1.0 / math.sqrt(head))
        for i in range(self._layers):
            p = f"encoder.layer.{i}"
            q, k, v = (
                self._dense(x, f"{p}.attention.self.{m}")
                .reshape(n, self._heads, head)
                .transpose(1, 0, 2)
                for m in ("query", "key", "value")
            )
            scores = (q @ k.transpose(0, 2, 1)) * scale
            scores = np.exp(scores - scores.max(axis=-1, keepdims=True))
            probs = scores / scores.sum(axis=-1, keepdims=True)
            context = (probs @ v).transpose(1, 0, 2).reshape(n, hidden)
            x = self._norm(
                self._dense(context, f"{p}.attention.output.dense") + x,
                f"{p}.attention.output.LayerNorm",
            )
            inner = _gelu(self._dense(x, f"{p}.intermediate.dense"))
            x = self._norm(self._dense(inner, f"{p}.output.dense") + x, f"{p}.output.LayerNorm")
        pooled: Array = x.mean(axis=0)
        if self._normalize:
            pooled = pooled / max(float(np.linalg.norm(pooled)), 1e-12)
        return pooled.astype(np.float32)

    def encode(self, texts: Sequence[str]) -> Matrix:
        """One row per text (each encoded alone: no padding, so nothing to mask)."""
        if not texts:
            return np.zeros((0, self.dims), dtype=np.float32)
        with single_blas_thread():
            return np.stack([self._embed_one(t) for t in texts])
