"""A thin layer over one LanceDB connection: tables, a key/value meta table, SQL literals."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterable, Sequence
from typing import Any

import lancedb  # type: ignore[import-untyped,unused-ignore]
import pyarrow as pa  # type: ignore[import-untyped,unused-ignore]

from .config import LanceConfig, connect_kwargs

META_TABLE = "meta"
META_SCHEMA = pa.schema([("key", pa.string()), ("value", pa.string())])
#: Largest ``IN (...)`` list put in one filter expression.
MAX_IN_LIST = 500

Table = Any
"""A LanceDB table (``lancedb.table.Table``; LanceDB ships no type information)."""


def sql_literal(value: str) -> str:
    """``value`` as a SQL string literal (single quotes doubled)."""
    return "'" + value.replace("'", "''") + "'"


def in_filters(column: str, values: Iterable[str]) -> list[str]:
    """``column IN (...)`` filters covering ``values``, at most :data:`MAX_IN_LIST` per filter."""
    items = sorted(set(values))
    return [
        f"{column} IN ({', '.join(sql_literal(v) for v in items[i : i + MAX_IN_LIST])})"
        for i in range(0, len(items), MAX_IN_LIST)
    ]


def vector_type(dims: int) -> pa.DataType:
    """The Arrow type of an embedding column: ``dims`` float32 values."""
    return pa.list_(pa.float32(), dims)


class LanceDatabase:
    """One lazily opened LanceDB connection with cached table handles.

    LanceDB tables are safe to use from several threads; table handles see other processes'
    commits according to ``read_consistency_seconds``.
    """

    def __init__(self, uri: str, config: LanceConfig) -> None:
        self.uri = uri
        self.config = config
        self._conn: Any = None
        self._tables: dict[str, Table] = {}
        self._lock = threading.Lock()

    @property
    def conn(self) -> Any:
        with self._lock:
            if self._conn is None:
                self._conn = lancedb.connect(self.uri, **connect_kwargs(self.config, self.uri))
            return self._conn

    def table_names(self) -> set[str]:
        names: set[str] = set()
        token: str | None = None
        while True:
            page = self.conn.list_tables(page_token=token)
            names.update(page.tables)
            token = page.page_token
            if not token:
                return names

    def open(self, name: str) -> Table | None:
        """The table ``name``, or ``None`` if it does not exist."""
        with self._lock:
            cached = self._tables.get(name)
        if cached is not None:
            return cached
        if name not in self.table_names():
            return None
        table = self.conn.open_table(name)
        with self._lock:
            return self._tables.setdefault(name, table)

    def forget(self, name: str) -> None:
        """Drop the cached handle of ``name`` (its table was deleted behind our back)."""
        with self._lock:
            self._tables.pop(name, None)

    def create(self, name: str, schema: pa.Schema, data: pa.Table | None = None) -> Table:
        """Create ``name`` (replacing any old table in one commit) and return it."""
        mode = "overwrite" if name in self.table_names() else "create"
        table = self.conn.create_table(name, data=data, schema=schema, mode=mode)
        with self._lock:
            self._tables[name] = table
        return table

    def get_meta(self, key: str) -> dict[str, Any] | None:
        """The JSON object stored under ``key`` in the meta table, if any."""
        table = self.open(META_TABLE)
        if table is None:
            return None
        rows = table.search().where(f"key = {sql_literal(key)}").select(["value"]).to_list()
        if not rows:
            return None
        value: dict[str, Any] = json.loads(rows[0]["value"])
        return value

    def put_meta(self, key: str, value: dict[str, Any]) -> None:
        """Store a JSON object under ``key`` (an upsert: one commit)."""
        table = self.open(META_TABLE) or self.create(META_TABLE, META_SCHEMA)
        row = pa.Table.from_pylist(
            [{"key": key, "value": json.dumps(value, sort_keys=True)}], schema=META_SCHEMA
        )
        table.merge_insert("key").when_matched_update_all().when_not_matched_insert_all().execute(
            row
        )

    def close(self) -> None:
        with self._lock:
            self._tables.clear()
            self._conn = None


def arrow_rows(rows: Sequence[dict[str, Any]], schema: pa.Schema) -> pa.Table:
    """Rows as an Arrow table of ``schema``."""
    return pa.Table.from_pylist(list(rows), schema=schema)
