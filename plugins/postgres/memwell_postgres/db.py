"""Connections to the server: a pool, the schema on first use, and clear errors when it is down."""

from __future__ import annotations

import math
import weakref
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import psycopg
from memwell.plugin import BackendUnavailableError, ConfigError
from pgvector.psycopg import register_vector
from psycopg import Connection, sql
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

    Connections are not checked before use (that would cost a round trip per search): a
    call that fails on a broken connection has the pool check every idle connection, and
    the error is raised as :class:`~memwell.contract.errors.BackendUnavailableError`; later calls
    get fresh connections, reconnecting by themselves once the server is back.
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
            reconnect_timeout=24 * 3600,
            open=False,
            name=f"memwell-postgres {self.where}",
        )
        self._ef_search: weakref.WeakKeyDictionary[Conn, int] = weakref.WeakKeyDictionary()
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
    def connection(self, *, ef_search: int | None = None) -> Iterator[Conn]:
        """A pooled autocommit connection; server failures become BackendUnavailableError.

        ``ef_search`` sets ``hnsw.ef_search`` for it (only when it differs from what the
        connection has, so a search costs no extra round trip).
        """
        with self._translate():
            try:
                with self.pool.connection() as conn:
                    if ef_search is not None and self._ef_search.get(conn) != ef_search:
                        conn.execute(
                            sql.SQL("SET hnsw.ef_search = {}").format(sql.Literal(ef_search))
                        )
                        self._ef_search[conn] = ef_search
                    yield conn
            except psycopg.OperationalError:
                self.pool.check()  # drop the other connections the server closed
                raise

    def close(self) -> None:
        self.pool.close()
