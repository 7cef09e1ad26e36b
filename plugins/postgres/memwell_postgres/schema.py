"""The tables memwell keeps in Postgres, created on first use under an advisory lock.

Every row carries its ``namespace`` (one memory) and, for indexed content, the
``generation`` it belongs to; ``namespaces.generation`` names the generation readers see.
The embedding cache has no namespace: a chunk embedded by any host is reused by all.
"""

from __future__ import annotations

import hashlib
from typing import Any

from psycopg import Connection, sql

SCHEMA_VERSION = 1
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
CREATE INDEX IF NOT EXISTS chunks_tsv ON {schema}.chunks USING gin (tsv);
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
    """Create the extension, schema and tables if missing (one transaction, serialised)."""
    with conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(%s)", (DDL_LOCK,))
        conn.execute(sql.SQL(_TABLES).format(schema=sql.Identifier(schema)))
        ident = sql.Identifier(schema, "schema_version")
        row = conn.execute(sql.SQL("SELECT max(version) FROM {}").format(ident)).fetchone()
        if row is None or row[0] is None:
            conn.execute(sql.SQL("INSERT INTO {} VALUES (%s)").format(ident), (SCHEMA_VERSION,))


def vector_index_name(model: str, dims: int) -> str:
    """The HNSW index serving ``model`` at ``dims`` (one per model and dimension)."""
    digest = hashlib.sha256(f"{model}\0{dims}".encode()).hexdigest()[:16]
    return f"chunks_hnsw_{digest}"


def vector_expr(dims: int) -> sql.Composable:
    """``embedding::vector(dims)``: the expression the HNSW index is built on."""
    return sql.SQL("embedding::vector({})").format(sql.Literal(dims))


def ensure_vector_index(conn: Connection[Any], schema: str, model: str, dims: int) -> bool:
    """Build the partial HNSW index for ``model``/``dims`` if missing; True if it was built.

    Called after a bulk load, so the graph is built once over all rows.
    """
    name = vector_index_name(model, dims)
    with conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(%s)", (DDL_LOCK,))
        exists = conn.execute(
            "SELECT 1 FROM pg_indexes WHERE schemaname = %s AND indexname = %s", (schema, name)
        ).fetchone()
        if exists:
            return False
        conn.execute(
            sql.SQL(
                "CREATE INDEX {name} ON {table} USING hnsw (({expr}) vector_cosine_ops) "
                "WHERE model = {model} AND dims = {dims}"
            ).format(
                name=sql.Identifier(name),
                table=sql.Identifier(schema, "chunks"),
                expr=vector_expr(dims),
                model=sql.Literal(model),
                dims=sql.Literal(dims),
            )
        )
    return True
