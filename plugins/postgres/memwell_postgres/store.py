"""The SQL of indexing: namespaces and generations, files, chunks and the shared cache.

Functions take a connection in autocommit mode and open their own short transactions.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from memwell.plugin import Vector
from psycopg import sql
from psycopg.types.json import Jsonb

from . import copy_binary
from .db import Conn
from .lexemes import index_text
from .postings import Posting, Postings
from .schema import drop_generation_indexes

SOURCE = "memory"


@dataclass(frozen=True)
class ChunkRow:
    """A chunk to store: lines, text, hash and (with a provider) its unit vector."""

    start_line: int
    end_line: int
    hash: str
    text: str
    embedding: Vector | None

    @property
    def key(self) -> tuple[str, int, int]:
        return (self.hash, self.start_line, self.end_line)


@dataclass(frozen=True)
class FileRow:
    """A file as indexed: content hash, stat data, the host that indexed it and the checkout
    (``writer``) it came from."""

    path: str
    hash: str
    mtime_ns: int
    size: int
    host: str
    writer: str


@dataclass(frozen=True)
class Active:
    """A namespace's active generation and the identity it was built with."""

    generation: int
    identity: dict[str, Any]


@dataclass(frozen=True)
class CacheKey:
    """What a cached vector depends on besides the text."""

    provider: str
    model: str
    provider_key: str


@dataclass
class Loaded:
    """What chunks add to (or remove from) a generation: chunks, terms, document frequencies."""

    chunks: int = 0
    tokens: int = 0
    df: Counter[str] = field(default_factory=Counter)

    def add(self, tokens: int, lexemes: Iterable[str]) -> None:
        self.chunks += 1
        self.tokens += tokens
        self.df.update(lexemes)

    def merge(self, other: Loaded) -> None:
        self.chunks += other.chunks
        self.tokens += other.tokens
        self.df.update(other.df)


def _loaded(rows: Iterable[Sequence[Any]]) -> Loaded:
    """``Loaded`` of deleted rows (id, ``ntokens``, the distinct lexemes of their ``tsv``)."""
    loaded = Loaded()
    for _, tokens, lexemes in rows:
        loaded.add(int(tokens), lexemes)
    return loaded


def _file_row(r: Sequence[Any]) -> FileRow:
    return FileRow(r[0], r[1], int(r[2]), int(r[3]), r[4], r[5])


def _array(value: Any) -> Any:
    """A pgvector value (``Vector`` from binary results, ndarray from text ones) as numbers."""
    to_numpy = getattr(value, "to_numpy", None)
    return to_numpy() if callable(to_numpy) else value


def lock_key(*parts: object) -> int:
    """A signed 64-bit advisory lock key for ``parts``."""
    digest = hashlib.blake2b("\0".join(map(str, parts)).encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big", signed=True)


class Store:
    """SQL for one namespace in one schema."""

    def __init__(self, schema: str, namespace: str) -> None:
        self.schema = schema
        self.namespace = namespace
        self.postings = Postings(schema, namespace)

    def t(self, name: str) -> sql.Identifier:
        return sql.Identifier(self.schema, name)

    def q(self, template: str, **tables: str) -> sql.Composed:
        """``template`` with ``{name}`` placeholders replaced by this schema's tables."""
        return sql.SQL(template).format(**{k: self.t(v) for k, v in tables.items()})

    # -- namespace and generations ----------------------------------------------------------

    def active(self, conn: Conn) -> Active | None:
        row = conn.execute(
            self.q("SELECT generation, identity FROM {n} WHERE namespace = %s", n="namespaces"),
            (self.namespace,),
        ).fetchone()
        return None if row is None else Active(int(row[0]), dict(row[1]))

    def postings_ready(self, conn: Conn) -> bool:
        """Whether the active generation has its keyword postings (true with no index yet)."""
        row = conn.execute(
            self.q(
                "SELECT g.postings FROM {n} n JOIN {g} g USING (namespace, generation) "
                "WHERE n.namespace = %s",
                n="namespaces",
                g="generations",
            ),
            (self.namespace,),
        ).fetchone()
        return row is None or bool(row[0])

    def lock_active(self, conn: Conn) -> int | None:
        """Inside a transaction: the active generation, its namespace row locked (file
        transactions and generation switches wait)."""
        row = conn.execute(
            self.q("SELECT generation FROM {n} WHERE namespace = %s FOR UPDATE", n="namespaces"),
            (self.namespace,),
        ).fetchone()
        return None if row is None else int(row[0])

    def mark_postings_ready(self, conn: Conn, generation: int) -> None:
        conn.execute(
            self.q(
                "UPDATE {g} SET postings = true WHERE namespace = %s AND generation = %s",
                g="generations",
            ),
            (self.namespace, generation),
        )

    def begin_generation(self, conn: Conn, identity: Mapping[str, Any], host: str) -> int:
        """Start building a new generation (the caller holds the namespace's rebuild lock).

        Generations left ``building`` by a crashed rebuild are dropped first.
        """
        self.drop_generations(conn, "building")
        with conn.transaction():
            row = conn.execute(
                self.q(
                    "SELECT coalesce(max(generation), 0) + 1 FROM {g} WHERE namespace = %s",
                    g="generations",
                ),
                (self.namespace,),
            ).fetchone()
            generation = int(row[0]) if row else 1
            conn.execute(
                self.q(
                    "INSERT INTO {g} (namespace, generation, identity, state, created_by, "
                    "postings) VALUES (%s, %s, %s, 'building', %s, true)",
                    g="generations",
                ),
                (self.namespace, generation, Jsonb(dict(identity)), host),
            )
        return generation

    def switch_to(self, conn: Conn, generation: int, identity: Mapping[str, Any]) -> None:
        """Make ``generation`` the one readers see, in one transaction, and retire the others.

        The namespace row is locked first, so this waits for in-flight file transactions
        (which hold it in share mode) and later ones see the new generation.
        """
        with conn.transaction():
            conn.execute(
                self.q("SELECT 1 FROM {n} WHERE namespace = %s FOR UPDATE", n="namespaces"),
                (self.namespace,),
            )
            conn.execute(
                self.q(
                    "INSERT INTO {n} (namespace, generation, identity) VALUES (%s, %s, %s) "
                    "ON CONFLICT (namespace) DO UPDATE SET generation = EXCLUDED.generation, "
                    "identity = EXCLUDED.identity, updated_at = now()",
                    n="namespaces",
                ),
                (self.namespace, generation, Jsonb(dict(identity))),
            )
            conn.execute(
                self.q(
                    "UPDATE {g} SET state = CASE WHEN generation = %s THEN 'active' "
                    "ELSE 'retired' END WHERE namespace = %s AND state <> 'retired'",
                    g="generations",
                ),
                (generation, self.namespace),
            )

    def drop_generations(self, conn: Conn, state: str) -> None:
        """Delete every generation of this namespace in ``state`` with its files and chunks."""
        with conn.transaction():
            rows = conn.execute(
                self.q(
                    "DELETE FROM {g} WHERE namespace = %s AND state = %s RETURNING generation",
                    g="generations",
                ),
                (self.namespace, state),
            ).fetchall()
            generations = [int(r[0]) for r in rows]
            for generation in generations:
                drop_generation_indexes(conn, self.schema, self.namespace, generation)
            if generations:
                for table in ("chunks", "files", "term_stats", "postings"):
                    conn.execute(
                        self.q(
                            "DELETE FROM {t} WHERE namespace = %s AND generation = ANY(%s)",
                            t=table,
                        ),
                        (self.namespace, generations),
                    )

    # -- files and chunks -------------------------------------------------------------------

    def files(self, conn: Conn, generation: int) -> dict[str, FileRow]:
        rows = conn.execute(
            self.q(
                "SELECT path, hash, mtime_ns, size, host, writer FROM {f} "
                "WHERE namespace = %s AND generation = %s AND source = %s",
                f="files",
            ),
            (self.namespace, generation, SOURCE),
        ).fetchall()
        return {r[0]: _file_row(r) for r in rows}

    def lock_file(self, conn: Conn, generation: int, path: str) -> bool:
        """Inside a transaction: lock ``path`` and check ``generation`` is still active.

        Takes the namespace row in share mode (a generation switch waits for this
        transaction) and the file's advisory lock (other writers of this file wait).
        """
        row = conn.execute(
            self.q("SELECT generation FROM {n} WHERE namespace = %s FOR SHARE", n="namespaces"),
            (self.namespace,),
        ).fetchone()
        if row is None or int(row[0]) != generation:
            return False
        conn.execute(
            "SELECT pg_advisory_xact_lock(%s)",
            (lock_key(self.schema, self.namespace, generation, SOURCE, path),),
        )
        return True

    def file_row(self, conn: Conn, generation: int, path: str) -> FileRow | None:
        row = conn.execute(
            self.q(
                "SELECT path, hash, mtime_ns, size, host, writer FROM {f} WHERE namespace = %s "
                "AND generation = %s AND source = %s AND path = %s",
                f="files",
            ),
            (self.namespace, generation, SOURCE, path),
        ).fetchone()
        return None if row is None else _file_row(row)

    def replace_chunks(
        self, conn: Conn, generation: int, path: str, chunks: Sequence[ChunkRow], model: str
    ) -> None:
        """Delete the file's chunks that are gone, insert the new ones, keep the rest."""
        existing = conn.execute(
            self.q(
                "SELECT id, hash, start_line, end_line FROM {c} WHERE namespace = %s "
                "AND generation = %s AND source = %s AND path = %s",
                c="chunks",
            ),
            (self.namespace, generation, SOURCE, path),
        ).fetchall()
        wanted = {c.key for c in chunks}
        stale = [int(r[0]) for r in existing if (r[1], r[2], r[3]) not in wanted]
        kept = {(r[1], r[2], r[3]) for r in existing} & wanted
        removed = Loaded()
        if stale:
            rows = conn.execute(
                self.q(
                    "DELETE FROM {c} WHERE id = ANY(%s) "
                    "RETURNING id, ntokens, tsvector_to_array(tsv)",
                    c="chunks",
                ),
                (stale,),
            ).fetchall()
            removed = _loaded(rows)
            self.postings.delete(conn, generation, [(int(r[0]), r[2]) for r in rows])
        added = self.insert_chunks(
            conn,
            generation,
            [(path, [c for c in chunks if c.key not in kept])],
            model,
        )
        self.apply_delta(conn, generation, added, removed)

    def insert_chunks(
        self,
        conn: Conn,
        generation: int,
        files: Sequence[tuple[str, Sequence[ChunkRow]]],
        model: str,
    ) -> Loaded:
        """COPY the chunks of ``files`` (path, chunks) and their postings in, each in one
        binary COPY; returns what they add to the generation's statistics."""
        loaded = Loaded()
        count = sum(len(chunks) for _, chunks in files)
        if not count:
            return loaded
        ids = self._new_ids(conn, count)
        postings: list[Posting] = []
        prefix = (
            copy_binary.text(self.namespace),
            copy_binary.int8(generation),
            copy_binary.text(SOURCE),
        )
        model_field = copy_binary.text(model)

        def rows() -> Iterator[bytes]:
            chunk_ids = iter(ids)
            for path, chunks in files:
                path_field = copy_binary.text(path)
                for chunk in chunks:
                    chunk_id = next(chunk_ids)
                    indexed = index_text(chunk.text)
                    loaded.add(indexed.length, indexed.lexemes)
                    postings.extend(
                        (lexeme, chunk_id, len(positions), indexed.length)
                        for lexeme, positions in indexed.entries
                    )
                    vector = chunk.embedding
                    yield copy_binary.row(
                        (
                            copy_binary.int8(chunk_id),
                            *prefix,
                            path_field,
                            copy_binary.int4(chunk.start_line),
                            copy_binary.int4(chunk.end_line),
                            copy_binary.text(chunk.hash),
                            model_field,
                            copy_binary.text(chunk.text.replace("\x00", "\ufffd")),  # no NUL
                            copy_binary.tsvector(indexed.entries),
                            copy_binary.int4(indexed.length),
                            None if vector is None else copy_binary.int4(len(vector)),
                            None if vector is None else copy_binary.vector(vector),
                        )
                    )

        copy_binary.copy_rows(
            conn,
            self.t("chunks"),
            "id, namespace, generation, source, path, start_line, end_line, hash, model, text, "
            "tsv, ntokens, dims, embedding",
            rows(),
        )
        self.postings.copy(conn, generation, postings)
        return loaded

    def _new_ids(self, conn: Conn, count: int) -> list[int]:
        """``count`` fresh chunk ids from the table's sequence (one round trip)."""
        rows = conn.execute(
            "SELECT nextval(pg_get_serial_sequence(%s, 'id')) FROM generate_series(1, %s)",
            (f"{self.schema}.chunks", count),
        ).fetchall()
        return [int(r[0]) for r in rows]

    def apply_delta(self, conn: Conn, generation: int, added: Loaded, removed: Loaded) -> None:
        """Add ``added`` and subtract ``removed`` from the generation's counts and document
        frequencies (lexemes in sorted order, so concurrent writers never deadlock)."""
        self.add_counts(
            conn, generation, added.chunks - removed.chunks, added.tokens - removed.tokens
        )
        delta = Counter(added.df)
        delta.subtract(removed.df)
        changes = sorted((t, n) for t, n in delta.items() if n)
        if not changes:
            return
        conn.execute(
            self.q(
                "INSERT INTO {s} AS s (namespace, generation, lexeme, df) "
                "SELECT %s, %s, t.lexeme, t.df "
                "FROM unnest(%s::text[], %s::bigint[]) AS t(lexeme, df) "
                "ON CONFLICT (namespace, generation, lexeme) "
                "DO UPDATE SET df = s.df + EXCLUDED.df",
                s="term_stats",
            ),
            (self.namespace, generation, [t for t, _ in changes], [n for _, n in changes]),
        )

    def copy_term_stats(self, conn: Conn, generation: int, df: Mapping[str, int]) -> None:
        """Write a freshly loaded generation's document frequencies (no rows exist yet)."""
        prefix = (copy_binary.text(self.namespace), copy_binary.int8(generation))
        copy_binary.copy_rows(
            conn,
            self.t("term_stats"),
            "namespace, generation, lexeme, df",
            (
                copy_binary.row((*prefix, copy_binary.text(lexeme), copy_binary.int8(count)))
                for lexeme, count in df.items()
            ),
        )

    def add_counts(self, conn: Conn, generation: int, chunks: int, tokens: int) -> None:
        if chunks or tokens:
            conn.execute(
                self.q(
                    "UPDATE {g} SET chunk_count = chunk_count + %s, token_count = token_count + %s"
                    " WHERE namespace = %s AND generation = %s",
                    g="generations",
                ),
                (chunks, tokens, self.namespace, generation),
            )

    def copy_files(self, conn: Conn, generation: int, rows: Sequence[FileRow]) -> None:
        """COPY the file rows of a generation being built (none of them exists yet)."""
        prefix = (
            copy_binary.text(self.namespace),
            copy_binary.int8(generation),
            copy_binary.text(SOURCE),
        )
        copy_binary.copy_rows(
            conn,
            self.t("files"),
            "namespace, generation, source, path, hash, mtime_ns, size, host, writer",
            (
                copy_binary.row(
                    (
                        *prefix,
                        copy_binary.text(r.path),
                        copy_binary.text(r.hash),
                        copy_binary.int8(r.mtime_ns),
                        copy_binary.int8(r.size),
                        copy_binary.text(r.host),
                        copy_binary.text(r.writer),
                    )
                )
                for r in rows
            ),
        )

    def upsert_file(self, conn: Conn, generation: int, row: FileRow) -> None:
        conn.execute(
            self.q(
                "INSERT INTO {f} (namespace, generation, source, path, hash, mtime_ns, size, host,"
                " writer) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s) ON CONFLICT (namespace, "
                "generation, source, path) DO UPDATE SET hash = EXCLUDED.hash, mtime_ns = "
                "EXCLUDED.mtime_ns, size = EXCLUDED.size, host = EXCLUDED.host, writer = "
                "EXCLUDED.writer, updated_at = now()",
                f="files",
            ),
            (
                self.namespace,
                generation,
                SOURCE,
                row.path,
                row.hash,
                row.mtime_ns,
                row.size,
                row.host,
                row.writer,
            ),
        )

    def delete_file(self, conn: Conn, generation: int, path: str) -> None:
        rows = conn.execute(
            self.q(
                "DELETE FROM {c} WHERE namespace = %s AND generation = %s AND source = %s "
                "AND path = %s RETURNING id, ntokens, tsvector_to_array(tsv)",
                c="chunks",
            ),
            (self.namespace, generation, SOURCE, path),
        ).fetchall()
        self.postings.delete(conn, generation, [(int(r[0]), r[2]) for r in rows])
        conn.execute(
            self.q(
                "DELETE FROM {f} WHERE namespace = %s AND generation = %s AND source = %s "
                "AND path = %s",
                f="files",
            ),
            (self.namespace, generation, SOURCE, path),
        )
        self.apply_delta(conn, generation, Loaded(), _loaded(rows))

    def counts(self, conn: Conn) -> tuple[int, int, int]:
        """(files, chunks, chunks with a vector) of the active generation."""
        row = conn.execute(
            self.q(
                "SELECT (SELECT count(*) FROM {f} f WHERE f.namespace = n.namespace AND "
                "f.generation = n.generation), count(c.id), count(c.embedding) FROM {n} n "
                "LEFT JOIN {c} c ON c.namespace = n.namespace AND c.generation = n.generation "
                "WHERE n.namespace = %s GROUP BY n.namespace, n.generation",
                f="files",
                n="namespaces",
                c="chunks",
            ),
            (self.namespace,),
        ).fetchone()
        return (0, 0, 0) if row is None else (int(row[0]), int(row[1]), int(row[2]))

    # -- the shared embedding cache ---------------------------------------------------------

    def cached_vectors(self, conn: Conn, key: CacheKey, hashes: Sequence[str]) -> dict[str, Vector]:
        if not hashes:
            return {}
        with conn.cursor(binary=True) as cur:
            rows = cur.execute(
                self.q(
                    "SELECT hash, embedding FROM {e} WHERE provider = %s AND model = %s "
                    "AND provider_key = %s AND hash = ANY(%s)",
                    e="embedding_cache",
                ),
                (key.provider, key.model, key.provider_key, list(hashes)),
            ).fetchall()
        return {r[0]: np.asarray(_array(r[1]), dtype=np.float32) for r in rows}

    def cache_vectors(self, conn: Conn, key: CacheKey, vectors: Mapping[str, Vector]) -> None:
        """Add vectors to the shared cache (an entry another host wrote first is kept): one
        binary COPY into a transaction's staging table, then one insert from it."""
        if not vectors:
            return
        with conn.transaction():
            conn.execute(
                "CREATE TEMP TABLE memwell_cache_staging (hash text, dims integer, "
                "embedding vector) ON COMMIT DROP"
            )
            copy_binary.copy_rows(
                conn,
                sql.Identifier("memwell_cache_staging"),
                "hash, dims, embedding",
                (
                    copy_binary.row(
                        (
                            copy_binary.text(h),
                            copy_binary.int4(len(v)),
                            copy_binary.vector(v),
                        )
                    )
                    for h, v in vectors.items()
                ),
            )
            conn.execute(
                self.q(
                    "INSERT INTO {e} (provider, model, provider_key, hash, dims, embedding) "
                    "SELECT %s, %s, %s, hash, dims, embedding FROM memwell_cache_staging "
                    "ORDER BY hash ON CONFLICT DO NOTHING",  # one order: writers never deadlock
                    e="embedding_cache",
                ),
                (key.provider, key.model, key.provider_key),
            )
