"""Rows in PostgreSQL's binary ``COPY`` format, encoded by memwell.

A bulk load streams about a thousand chunk rows per batch. Encoding them here (text as
UTF-8, integers big-endian, vectors and ``tsvector`` values in their types' binary receive
formats) spares the server from parsing text literals of floats and quoted lexemes, and the
client from adapting every value one by one.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np
from psycopg import sql

from .db import Conn

SIGNATURE = b"PGCOPY\n\xff\r\n\x00" + struct.pack(">ii", 0, 0)
TRAILER = struct.pack(">h", -1)
FLUSH_BYTES = 1 << 20
"""Encoded rows are handed to the connection in pieces of about this size."""

_INT2 = struct.Struct(">h")
_INT4 = struct.Struct(">i")
_INT8 = struct.Struct(">q")
_VECTOR_HEADER = struct.Struct(">HH")
_ONE_POSITION = struct.Struct(">xHH")  # the lexeme's NUL, a count of 1, the position
_NULL = _INT4.pack(-1)

Field = bytes | None
"""One encoded value (``None`` is SQL NULL)."""


def text(value: str) -> bytes:
    return value.encode()


def int4(value: int) -> bytes:
    return _INT4.pack(value)


def int8(value: int) -> bytes:
    return _INT8.pack(value)


def vector(values: Any) -> bytes:
    """A pgvector ``vector``: dimensions, a reserved zero, then big-endian float32s."""
    array = np.asarray(values, dtype=">f4").ravel()
    return _VECTOR_HEADER.pack(array.shape[0], 0) + array.tobytes()


def tsvector(entries: Sequence[tuple[str, Sequence[int]]]) -> bytes:
    """A ``tsvector`` from distinct lexemes, each with its increasing positions (1..16383,
    at most 256, weight D); the server sorts the lexemes itself."""
    parts = [_INT4.pack(len(entries))]
    for lexeme, positions in entries:
        parts.append(lexeme.encode())
        if len(positions) == 1:  # most terms of a chunk occur once
            parts.append(_ONE_POSITION.pack(1, positions[0]))
        else:
            parts.append(struct.pack(f">xH{len(positions)}H", len(positions), *positions))
    return b"".join(parts)


def row(fields: Sequence[Field]) -> bytes:
    """One tuple: the field count, then each field's length and bytes."""
    parts = [_INT2.pack(len(fields))]
    for value in fields:
        if value is None:
            parts.append(_NULL)
        else:
            parts.append(_INT4.pack(len(value)))
            parts.append(value)
    return b"".join(parts)


def copy_rows(conn: Conn, table: sql.Composable, columns: str, rows: Iterable[bytes]) -> None:
    """``COPY table (columns) FROM STDIN (FORMAT BINARY)`` with the encoded ``rows``."""
    statement = sql.SQL("COPY {} ({}) FROM STDIN (FORMAT BINARY)").format(table, sql.SQL(columns))
    with conn.cursor() as cur, cur.copy(statement) as copy:
        buffer = bytearray(SIGNATURE)
        for encoded in rows:
            buffer += encoded
            if len(buffer) >= FLUSH_BYTES:
                copy.write(buffer)
                buffer = bytearray()
        buffer += TRAILER
        copy.write(buffer)
