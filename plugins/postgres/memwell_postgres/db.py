"""Connections to the server: a pool, the schema on first use, and clear errors when it is down."""

from __future__ import annotations

import math
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import psycopg
from memwell.errors import BackendUnavailableError, ConfigError
from pgvector.psycopg import register_vector
from psycopg import Connection
from psycopg.conninfo import conninfo_to_dict
from psycopg_pool import ConnectionPool

from .config import PostgresConfig
from .schema import create_schema

Conn = Connection[Any]


def describe_dsn(dsn: str) -> str:
    """``host:port/dbname`` of a connection string, never its password."""
    try:
        info = conninfo_to_dict(dsn)
    except psycopg.ProgrammingError:
        return "<unparsable dsn>"
    host = info.get("host") or "localhost"
    return f"{host}:{info.get('port') or 5432}/{info.get('dbname') or info.get('user') or ''}"


def require_dsn(config: PostgresConfig) -> str:
    if not config.dsn:
        raise ConfigError(
            'the postgres backend needs [backends.postgres] dsn = "postgresql://user@host/db"',
            key="backends.postgres.dsn",
        )
    return config.dsn


def connect_once(dsn: str, timeout: float) -> Conn:
    """One autocommit connection (no pool), for probes and schema creation."""
    try:
        return psycopg.connect(dsn, autocommit=True, connect_timeout=max(1, math.ceil(timeout)))
    except psycopg.OperationalError as exc:
        raise BackendUnavailableError(
            f"postgres server {describe_dsn(dsn)} unreachable: {str(exc).strip()}"
        ) from exc


class Database:
    """A connection pool to one server, with memwell's schema created on first open.

    Connections are checked before use, so after a server restart the first call fails with
    :class:`~memwell.errors.BackendUnavailableError` (while the server is down) and later
    calls reconnect by themselves.
    """

    def __init__(self, config: PostgresConfig) -> None:
        self.config = config
        self.dsn = require_dsn(config)
        self.where = describe_dsn(self.dsn)
        self.schema = config.schema_name
        with self._translate(), connect_once(self.dsn, config.connect_timeout) as conn:
            create_schema(conn, self.schema)
        self.pool: ConnectionPool[Conn] = ConnectionPool(
            self.dsn,
            min_size=min(config.pool_min_size, config.pool_max_size),
            max_size=config.pool_max_size,
            timeout=config.connect_timeout,
            kwargs={
                "autocommit": True,
                "connect_timeout": max(1, math.ceil(config.connect_timeout)),
            },
            configure=self._configure,
            check=ConnectionPool.check_connection,
            reconnect_timeout=24 * 3600,
            open=False,
            name=f"memwell-postgres {self.where}",
        )
        self.pool.open(wait=False)

    def _configure(self, conn: Conn) -> None:
        register_vector(conn)
        conn.execute("SET hnsw.iterative_scan = 'relaxed_order'")

    @contextmanager
    def _translate(self) -> Iterator[None]:
        try:
            yield
        except psycopg.OperationalError as exc:
            reason = str(exc).strip() or type(exc).__name__
            raise BackendUnavailableError(
                f"postgres server {self.where} unavailable: {reason}"
            ) from exc

    @contextmanager
    def connection(self) -> Iterator[Conn]:
        """A pooled autocommit connection; server failures become BackendUnavailableError."""
        with self._translate(), self.pool.connection() as conn:
            yield conn

    def close(self) -> None:
        self.pool.close()
