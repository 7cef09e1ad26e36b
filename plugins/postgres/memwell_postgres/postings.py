"""The keyword index: one posting per (term, chunk), with the term's frequency in the chunk
and the chunk's BM25 length (:mod:`.search` reads them with MaxScore pruning). Writers add
and delete a file's postings in the file's own transaction.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from psycopg import sql

from . import copy_binary
from .db import Conn

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
            c=sql.Identifier(self.schema, "chunks"),
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

    def from_tsvectors(self, conn: Conn, generation: int) -> int:
        """Rebuild a generation's postings from its chunks' ``tsvector`` values (a namespace
        indexed before postings existed); returns the postings written."""
        conn.execute(
            self._q("DELETE FROM {p} WHERE namespace = %s AND generation = %s"),
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
        return written

    def analyze(self, conn: Conn) -> None:
        """Vacuum and analyze after a bulk load (planner statistics, index-only scans)."""
        for table in ("postings", "chunks"):
            conn.execute(sql.SQL("VACUUM (ANALYZE) {}").format(sql.Identifier(self.schema, table)))
