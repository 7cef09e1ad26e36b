"""The keyword index: one posting per (term, chunk) and the per-block bounds of each term.

``postings`` holds each term's frequency in a chunk and the chunk's BM25 length;
``posting_blocks`` holds, per term and block of :data:`BLOCK_SIZE` consecutive chunk ids, the
largest frequency and the smallest length among that term's postings in the block. Those two
give an upper bound of the term's BM25 contribution to any chunk of the block, whatever the
average length, which lets a search skip every block that cannot reach the best ``limit``
(:mod:`.search`). A bound stays valid when chunks go (it may only be loose), so deletions
leave blocks as they are; insertions raise the bounds in the same transaction.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from psycopg import sql

from . import copy_binary
from .db import Conn

BLOCK_SHIFT = 7
BLOCK_SIZE = 1 << BLOCK_SHIFT
"""Chunk ids per block (blocks are ranges of ids: ``chunk_id >> BLOCK_SHIFT``)."""

Posting = tuple[str, int, int, int]
"""(lexeme, chunk id, term frequency, chunk length)."""


class Postings:
    """The keyword index of one namespace in one schema."""

    def __init__(self, schema: str, namespace: str) -> None:
        self.schema = schema
        self.namespace = namespace

    def _q(self, template: str) -> sql.Composed:
        return sql.SQL(template).format(
            p=sql.Identifier(self.schema, "postings"),
            b=sql.Identifier(self.schema, "posting_blocks"),
            c=sql.Identifier(self.schema, "chunks"),
            shift=sql.Literal(BLOCK_SHIFT),
        )

    def copy(self, conn: Conn, generation: int, postings: Iterable[Posting]) -> None:
        """COPY ``postings`` in (binary)."""
        prefix = (copy_binary.text(self.namespace), copy_binary.int8(generation))
        copy_binary.copy_rows(
            conn,
            sql.Identifier(self.schema, "postings"),
            "namespace, generation, lexeme, chunk_id, tf, len",
            (
                copy_binary.row(
                    (
                        *prefix,
                        copy_binary.text(lexeme),
                        copy_binary.int8(chunk_id),
                        copy_binary.int4(tf),
                        copy_binary.int4(length),
                    )
                )
                for lexeme, chunk_id, tf, length in postings
            ),
        )

    def raise_bounds(self, conn: Conn, generation: int, postings: Sequence[Posting]) -> None:
        """Widen the bounds of the blocks ``postings`` fall in (in key order, so concurrent
        writers never deadlock)."""
        bounds: dict[tuple[str, int], tuple[int, int]] = {}
        for lexeme, chunk_id, tf, length in postings:
            key = (lexeme, chunk_id >> BLOCK_SHIFT)
            old = bounds.get(key)
            bounds[key] = (tf, length) if old is None else (max(old[0], tf), min(old[1], length))
        if not bounds:
            return
        keys = sorted(bounds)
        conn.execute(
            self._q(
                "INSERT INTO {b} AS b (namespace, generation, lexeme, block, max_tf, min_len) "
                "SELECT %s, %s, t.lexeme, t.block, t.tf, t.len FROM unnest(%s::text[], "
                "%s::bigint[], %s::int[], %s::int[]) AS t(lexeme, block, tf, len) "
                "ON CONFLICT (namespace, generation, lexeme, block) DO UPDATE SET "
                "max_tf = greatest(b.max_tf, EXCLUDED.max_tf), "
                "min_len = least(b.min_len, EXCLUDED.min_len)"
            ),
            (
                self.namespace,
                generation,
                [k[0] for k in keys],
                [k[1] for k in keys],
                [bounds[k][0] for k in keys],
                [bounds[k][1] for k in keys],
            ),
        )

    def delete(
        self, conn: Conn, generation: int, rows: Iterable[tuple[int, Sequence[str]]]
    ) -> None:
        """Delete the postings of deleted chunks, given as (chunk id, its lexemes)."""
        pairs = [(lexeme, chunk_id) for chunk_id, lexemes in rows for lexeme in lexemes]
        if not pairs:
            return
        conn.execute(
            self._q(
                "DELETE FROM {p} p USING unnest(%s::text[], %s::bigint[]) AS d(lexeme, id) "
                "WHERE p.namespace = %s AND p.generation = %s AND p.lexeme = d.lexeme "
                "AND p.chunk_id = d.id"
            ),
            ([p[0] for p in pairs], [p[1] for p in pairs], self.namespace, generation),
        )

    def build_bounds(self, conn: Conn, generation: int) -> None:
        """Every block bound of a freshly loaded generation, from its postings."""
        conn.execute(
            self._q(
                "INSERT INTO {b} (namespace, generation, lexeme, block, max_tf, min_len) "
                "SELECT namespace, generation, lexeme, chunk_id >> {shift}, max(tf), min(len) "
                "FROM {p} WHERE namespace = %s AND generation = %s "
                "GROUP BY namespace, generation, lexeme, chunk_id >> {shift}"
            ),
            (self.namespace, generation),
        )

    def from_tsvectors(self, conn: Conn, generation: int) -> int:
        """Rebuild a generation's postings and bounds from its chunks' ``tsvector`` values
        (a namespace indexed before postings existed); returns the postings written."""
        for table in ("postings", "posting_blocks"):
            conn.execute(
                sql.SQL("DELETE FROM {} WHERE namespace = %s AND generation = %s").format(
                    sql.Identifier(self.schema, table)
                ),
                (self.namespace, generation),
            )
        written = conn.execute(
            self._q(
                "INSERT INTO {p} (namespace, generation, lexeme, chunk_id, tf, len) "
                "SELECT c.namespace, c.generation, u.lexeme, c.id, cardinality(u.positions), "
                "c.ntokens FROM {c} c, unnest(c.tsv) u "
                "WHERE c.namespace = %s AND c.generation = %s"
            ),
            (self.namespace, generation),
        ).rowcount
        self.build_bounds(conn, generation)
        return written

    def analyze(self, conn: Conn) -> None:
        """Vacuum and analyze after a bulk load (planner statistics, index-only scans)."""
        for table in ("postings", "posting_blocks", "chunks"):
            conn.execute(sql.SQL("VACUUM (ANALYZE) {}").format(sql.Identifier(self.schema, table)))
