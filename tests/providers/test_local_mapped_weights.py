"""The local model's weights are memory-mapped from model.safetensors, not read and copied."""

from __future__ import annotations

import json
import struct
from pathlib import Path

import numpy as np
from memwell_local.numpy_bert import mapped_safetensors


def _write(path: Path, tensors: dict[str, tuple[str, np.ndarray]]) -> None:
    header: dict[str, object] = {"__metadata__": {"format": "pt"}}
    blobs, offset = [], 0
    for name, (dtype, array) in tensors.items():
        data = array.tobytes()
        header[name] = {
            "dtype": dtype,
            "shape": list(array.shape),
            "data_offsets": [offset, offset + len(data)],
        }
        blobs.append(data)
        offset += len(data)
    raw = json.dumps(header).encode()
    path.write_bytes(struct.pack("<Q", len(raw)) + raw + b"".join(blobs))


def test_tensors_are_read_only_views_of_the_file_with_their_values(tmp_path: Path) -> None:
    weight = np.arange(12, dtype=np.float32).reshape(3, 4) / 7
    ids = np.array([[0, 1, 2]], dtype=np.int64)
    _write(tmp_path / "model.safetensors", {"w": ("F32", weight), "ids": ("I64", ids)})
    tensors = mapped_safetensors(tmp_path / "model.safetensors")
    assert tensors is not None and set(tensors) == {"w", "ids"}
    assert np.array_equal(tensors["w"], weight) and tensors["w"].dtype == np.float32
    assert np.array_equal(tensors["ids"], ids)
    assert not tensors["w"].flags.writeable, "a view of the mapped file, not a copy"


def test_a_dtype_numpy_cannot_view_gives_none(tmp_path: Path) -> None:
    bf16 = np.zeros((2, 2), dtype=np.uint16)  # bfloat16 bits
    _write(tmp_path / "model.safetensors", {"w": ("BF16", bf16)})
    assert mapped_safetensors(tmp_path / "model.safetensors") is None
