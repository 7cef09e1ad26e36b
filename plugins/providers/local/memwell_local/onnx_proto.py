"""Just enough of the ONNX protobuf format to write a model: no ``onnx`` package needed.

onnxruntime loads a model from the bytes of an ONNX ``ModelProto``. The forward pass of
:mod:`memwell_local.onnx_bert` is a few dozen nodes over the weights memwell already has, so
it is written here directly with the protobuf wire format (varints and length-delimited
fields) and the field numbers of ``onnx.proto3``, instead of depending on the 9 MB ``onnx``
package and its protobuf classes at run time.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

#: ``TensorProto.DataType`` codes of the NumPy dtypes used here.
DATA_TYPES = {
    np.dtype(np.float32): 1,
    np.dtype(np.uint8): 2,
    np.dtype(np.int8): 3,
    np.dtype(np.int32): 6,
    np.dtype(np.int64): 7,
}
_VARINT, _FIXED32, _BYTES = 0, 5, 2
#: ``AttributeProto.AttributeType`` codes.
_ATTR_FLOAT, _ATTR_INT, _ATTR_INTS = 1, 2, 7


def _varint(value: int) -> bytes:
    value &= (1 << 64) - 1  # negative int64 values are ten-byte two's complement
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def _key(field: int, wire: int) -> bytes:
    return _varint(field << 3 | wire)


def _int(field: int, value: int) -> bytes:
    return _key(field, _VARINT) + _varint(value)


def _bytes(field: int, value: bytes | str) -> bytes:
    data = value.encode() if isinstance(value, str) else value
    return _key(field, _BYTES) + _varint(len(data)) + data


def _many(field: int, items: Iterable[bytes | str]) -> bytes:
    return b"".join(_bytes(field, item) for item in items)


def tensor(name: str, array: np.ndarray[Any, Any]) -> bytes:
    """A ``TensorProto`` holding ``array`` as little-endian raw data."""
    data = np.ascontiguousarray(array)
    dims = b"".join(_int(1, d) for d in data.shape)
    return dims + _int(2, DATA_TYPES[data.dtype]) + _bytes(8, name) + _bytes(9, data.tobytes())


def _attribute(name: str, value: float | int | Sequence[int]) -> bytes:
    head = _bytes(1, name)
    if isinstance(value, float):
        return head + _key(2, _FIXED32) + struct.pack("<f", value) + _int(20, _ATTR_FLOAT)
    if isinstance(value, int):
        return head + _int(3, value) + _int(20, _ATTR_INT)
    return head + b"".join(_int(8, v) for v in value) + _int(20, _ATTR_INTS)


def node(
    op: str,
    inputs: Sequence[str],
    outputs: Sequence[str],
    domain: str = "",
    **attributes: float | int | Sequence[int],
) -> bytes:
    """A ``NodeProto`` (``domain`` ``""`` is the standard operator set)."""
    attrs = _many(5, (_attribute(k, v) for k, v in attributes.items()))
    return _many(1, inputs) + _many(2, outputs) + _bytes(4, op) + attrs + _bytes(7, domain)


def value_info(name: str, dtype: type[np.generic], shape: Sequence[int | str]) -> bytes:
    """A ``ValueInfoProto`` for a graph input or output; a ``str`` dimension is symbolic."""
    dims = b"".join(_bytes(1, _bytes(2, d) if isinstance(d, str) else _int(1, d)) for d in shape)
    tensor_type = _int(1, DATA_TYPES[np.dtype(dtype)]) + _bytes(2, dims)
    return _bytes(1, name) + _bytes(2, _bytes(1, tensor_type))


def model(
    nodes: Sequence[bytes],
    initializers: Sequence[bytes],
    inputs: Sequence[bytes],
    outputs: Sequence[bytes],
    opsets: dict[str, int],
) -> bytes:
    """A serialised ``ModelProto`` (IR version 8) of one graph."""
    graph = (
        _many(1, nodes)
        + _bytes(2, "memwell")
        + _many(5, initializers)
        + _many(11, inputs)
        + _many(12, outputs)
    )
    opset_ids = _many(8, (_bytes(1, domain) + _int(2, v) for domain, v in opsets.items()))
    return _int(1, 8) + _bytes(2, "memwell") + _bytes(7, graph) + opset_ids
