"""The tables memwell keeps in Postgres, created on first use under an advisory lock.

Every row carries its ``namespace`` (one memory) and, for indexed content, the
``generation`` it belongs to; ``namespaces.generation`` names the generation readers see.
The embedding cache has no namespace: a chunk embedded by any host is reused by all.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from psycopg import Connection, sql
from psycopg.errors import Diagnostic

from .config import PostgresConfig

SCHEMA_VERSION = 2
DDL_LOCK = 0x6D656D77656C6C  # pg_advisory_xact_lock key serialising schema changes

_TABLES = """
CREATE EXTENSION IF NOT EXISTS vector;
CREATE SCHEMA IF NOT EXISTS {schema};
CREATE TABLE IF NOT EXISTS {schema}.namespaces (
    namespace text PRIMARY KEY,
    generation bigint NOT NULL,
    identity jsonb NOT NULL,
    updated_at timestamptz NOT NULL DEFAULT now()
);
CREATE TABLE IF NOT EXISTS {schema}.generations (
    namespace text NOT NULL,
    generation bigint NOT NULL,
    identity jsonb NOT NULL,
    state text NOT NULL CHECK (state IN ('building', 'active', 'retired')),
    chunk_count bigint NOT NULL DEFAULT 0,
    token_count bigint NOT NULL DEFAULT 0,
    created_by text NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (namespace, generation)
);
CREATE TABLE IF NOT EXISTS {schema}.files (
    namespace text NOT NULL,
    generation bigint NOT NULL,
    source text NOT NULL,
    path text NOT NULL,
    hash text NOT NULL,
    mtime_ns bigint NOT NULL,
    size bigint NOT NULL,
    host text NOT NULL,
    updated_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (namespace, generation, source, path)
);
CREATE TABLE IF NOT EXISTS {schema}.chunks (
    id bigserial PRIMARY KEY,
    namespace text NOT NULL,
    generation bigint NOT NULL,
    source text NOT NULL,
    path text NOT NULL,
    start_line integer NOT NULL,
    end_line integer NOT NULL,
    hash text NOT NULL,
    model text NOT NULL,
    text text NOT NULL,
    tsv tsvector NOT NULL,
    ntokens integer NOT NULL,
    dims integer,
    embedding vector
);
CREATE INDEX IF NOT EXISTS chunks_file ON {schema}.chunks (namespace, generation, source, path);
CREATE TABLE IF NOT EXISTS {schema}.term_stats (
    namespace text NOT NULL,
    generation bigint NOT NULL,
    lexeme text NOT NULL,
    df bigint NOT NULL,
    PRIMARY KEY (namespace, generation, lexeme)
);
CREATE TABLE IF NOT EXISTS {schema}.postings (
    namespace text NOT NULL,
    generation bigint NOT NULL,
    lexeme text NOT NULL,
    chunk_id bigint NOT NULL,
    tf integer NOT NULL,
    len integer NOT NULL
);
DROP TABLE IF EXISTS {schema}.posting_blocks;
CREATE TABLE IF NOT EXISTS {schema}.embedding_cache (
    provider text NOT NULL,
    model text NOT NULL,
    provider_key text NOT NULL,
    hash text NOT NULL,
    dims integer NOT NULL,
    embedding vector NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (provider, model, provider_key, hash)
);
CREATE TABLE IF NOT EXISTS {schema}.schema_version (version integer NOT NULL);
"""


def create_schema(conn: Connection[Any], schema: str) -> None:
    """Create the extension, schema and tables if missing (one transaction, serialised).

    A version 1 schema loses its table-wide full-text and vector indexes: version 2 indexes
    each generation on its own, after its bulk load.
    """
    with conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(%s)", (DDL_LOCK,))
        conn.execute(sql.SQL(_TABLES).format(schema=sql.Identifier(schema)))
        _add_missing_columns(conn, schema)
        ident = sql.Identifier(schema, "schema_version")
        row = conn.execute(sql.SQL("SELECT max(version) FROM {}").format(ident)).fetchone()
        version = None if row is None else row[0]
        if version is not None and version < SCHEMA_VERSION:
            stale = conn.execute(
                "SELECT indexname FROM pg_indexes WHERE schemaname = %s AND tablename = 'chunks'"
                " AND (indexname = 'chunks_tsv' OR indexname LIKE 'chunks_hnsw_%%')",
                (schema,),
            ).fetchall()
            for (name,) in stale:
                conn.execute(sql.SQL("DROP INDEX {}").format(sql.Identifier(schema, name)))
            conn.execute(sql.SQL("UPDATE {} SET version = %s").format(ident), (SCHEMA_VERSION,))
        elif version is None:
            conn.execute(sql.SQL("INSERT INTO {} VALUES (%s)").format(ident), (SCHEMA_VERSION,))


_ADDED_COLUMNS = {
    ("files", "writer"): "text NOT NULL DEFAULT ''",
    ("generations", "postings"): "boolean NOT NULL DEFAULT false",
}
"""Columns added after version 2, created on an older schema when it is first opened."""


def _add_missing_columns(conn: Connection[Any], schema: str) -> None:
    present = set(
        conn.execute(
            "SELECT table_name, column_name FROM information_schema.columns "
            "WHERE table_schema = %s",
            (schema,),
        ).fetchall()
    )
    for (table, column), definition in _ADDED_COLUMNS.items():
        if (table, column) not in present:
            conn.execute(
                sql.SQL("ALTER TABLE {} ADD COLUMN {} {}").format(
                    sql.Identifier(schema, table), sql.Identifier(column), sql.SQL(definition)
                )
            )


def _digest(*parts: object) -> str:
    return hashlib.sha256("\0".join(map(str, parts)).encode()).hexdigest()[:16]


def generation_tag(namespace: str, generation: int) -> str:
    """The part of an index name that says which generation of which namespace it serves."""
    return _digest(namespace, generation)


def vector_expr(dims: int) -> sql.Composable:
    """``embedding::vector(dims)``: the expression the HNSW indexes are built on."""
    return sql.SQL("embedding::vector({})").format(sql.Literal(dims))


def generation_filter(namespace: str, generation: int, alias: str = "") -> sql.Composable:
    """``namespace = '<ns>' AND generation = <n>`` as literals (columns of table ``alias``
    if given), the predicate of a generation's partial indexes (a query must spell it this
    way for the planner to use them)."""
    prefix = sql.SQL(f"{sql.Identifier(alias).as_string(None)}." if alias else "")
    return sql.SQL("{p}namespace = {ns} AND {p}generation = {gen}").format(
        p=prefix, ns=sql.Literal(namespace), gen=sql.Literal(generation)
    )


def vector_filter(model: str, dims: int) -> sql.Composable:
    return sql.SQL("model = {} AND dims = {}").format(sql.Literal(model), sql.Literal(dims))


def ensure_generation_indexes(
    conn: Connection[Any],
    schema: str,
    namespace: str,
    generation: int,
    vector: tuple[str, int] | None,
    config: PostgresConfig,
) -> IndexBuild:
    """Build the generation's postings index and, for ``vector`` = (model, dims), its
    HNSW index, if missing; returns the names built and any memory warning of the server.

    Both are partial indexes over this generation's rows only, so a bulk load writes no
    index entries and each index is built once over all rows after it.
    """
    tag = generation_tag(namespace, generation)
    table = sql.Identifier(schema, "chunks")
    where = generation_filter(namespace, generation)
    postings_name = f"postings_{tag}"
    wanted: dict[str, tuple[str, sql.Composed]] = {
        postings_name: (
            "postings",
            sql.SQL("CREATE INDEX {} ON {} (lexeme, chunk_id) INCLUDE (tf, len) WHERE {}").format(
                sql.Identifier(postings_name), sql.Identifier(schema, "postings"), where
            ),
        )
    }
    if vector is not None:
        model, dims = vector
        vec_name = f"chunks_vec_{tag}_{_digest(model, dims)[:8]}"
        wanted[vec_name] = (
            "chunks",
            sql.SQL(
                "CREATE INDEX {name} ON {table} USING hnsw (({expr}) vector_cosine_ops) "
                "WITH (m = {m}, ef_construction = {ef}) WHERE {where} AND {vfilter}"
            ).format(
                name=sql.Identifier(vec_name),
                table=table,
                expr=vector_expr(dims),
                m=sql.Literal(config.hnsw_m),
                ef=sql.Literal(config.hnsw_ef_construction),
                where=where,
                vfilter=vector_filter(model, dims),
            ),
        )
    built: list[str] = []
    with conn.transaction(), _memory_notices(conn) as notices:
        conn.execute("SELECT pg_advisory_xact_lock(%s)", (DDL_LOCK,))
        for setting, value in (
            ("maintenance_work_mem", config.maintenance_work_mem),
            ("max_parallel_maintenance_workers", config.max_parallel_maintenance_workers),
        ):
            if value is not None:
                conn.execute("SELECT set_config(%s, %s, true)", (setting, str(value)))
        present = {
            r[0]
            for r in conn.execute(
                "SELECT indexname FROM pg_indexes WHERE schemaname = %s AND indexname LIKE %s",
                (schema, f"%_{tag}%"),
            ).fetchall()
        }
        missing = {name: job for name, job in wanted.items() if name not in present}
        targets = {table for table, _ in missing.values()}
        if targets:
            # Writers take ``chunks`` before ``postings``; an index build takes both tables'
            # SHARE locks in that order up front, so it queues behind a writer of another
            # namespace instead of holding ``postings`` while that writer waits for it.
            conn.execute(
                sql.SQL("LOCK TABLE {} IN SHARE MODE").format(
                    sql.SQL(", ").join(
                        sql.Identifier(schema, t) for t in ("chunks", "postings") if t in targets
                    )
                )
            )
        for name, (_, statement) in missing.items():
            conn.execute(statement)
            built.append(name)
    return IndexBuild(built, notices)


@dataclass(frozen=True)
class IndexBuild:
    """The indexes a call built and the server's warnings about their memory."""

    built: list[str]
    warnings: list[str]


@contextmanager
def _memory_notices(conn: Connection[Any]) -> Iterator[list[str]]:
    """Collect the server's notices about ``maintenance_work_mem`` (pgvector says when the
    HNSW graph outgrows it: the rest of the build is much slower) while the block runs."""
    found: list[str] = []

    def handler(diag: Diagnostic) -> None:
        message = diag.message_primary or ""
        if "maintenance_work_mem" in message:
            found.append(f"{message} ({diag.message_hint or 'raise maintenance_work_mem'})")

    conn.add_notice_handler(handler)
    try:
        yield found
    finally:
        conn.remove_notice_handler(handler)


def drop_generation_indexes(
    conn: Connection[Any], schema: str, namespace: str, generation: int
) -> None:
    """Drop the partial indexes of a generation that is being deleted."""
    tag = generation_tag(namespace, generation)
    rows = conn.execute(
        "SELECT indexname FROM pg_indexes WHERE schemaname = %s AND indexname LIKE %s",
        (schema, f"%_{tag}%"),
    ).fetchall()
    for (name,) in rows:
        conn.execute(sql.SQL("DROP INDEX IF EXISTS {}").format(sql.Identifier(schema, name)))
