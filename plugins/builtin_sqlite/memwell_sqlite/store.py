"""One index database: schema, writes, and the raw keyword and vector queries."""

from __future__ import annotations

import json
import time
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

import msgspec
from memwell.plugin import (
    Candidate,
    ChunkTerms,
    FtsQuery,
    bm25_rank_to_score,
    fts_phrase,
    fts_text_and_terms,
    mean_vector,
)
from memwell.plugin_sdk import lazy_module, sqlite_errors

from .driver import DriverInfo, attach_vec, open_connection
from .faults import IndexDamagedError

if TYPE_CHECKING:
    import numpy as np
    from memwell.plugin import Matrix, Vector
else:
    np = lazy_module("numpy")

META_KEY = "memwell_index_meta_v1"
FTS_DAMAGED = "FTS table damaged"
SCHEMA_VERSION = 4
"""2: ``chunks.terms`` (the chunk's keyword-boost terms, computed at index time); 3: CJK runs in
the FTS table as bigrams and each run's last character (``memwell.retrieval.cjk``'s
``segment_for_fts``), of the NFC text; 4: ``chunks.terms`` and ``chunks.term_count`` are the
chunk's :class:`ChunkTerms` (words only, and the count of every distinct term)."""

#: The first schema whose FTS text is ``segment_for_fts``'s.
CJK_PREFIX_SCHEMA = 3
#: The first schema whose chunks store their :class:`ChunkTerms`.
CHUNK_TERMS_SCHEMA = 4

_TOKENIZERS = {
    "unicode61": "porter unicode61 remove_diacritics 2",
    "trigram": "trigram case_sensitive 0",
}

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS files (
    path TEXT NOT NULL, source TEXT NOT NULL DEFAULT 'memory', hash TEXT NOT NULL,
    mtime INTEGER NOT NULL, size INTEGER NOT NULL, PRIMARY KEY (path, source)
);
CREATE TABLE IF NOT EXISTS chunks (
    rowid INTEGER PRIMARY KEY, id TEXT NOT NULL UNIQUE, path TEXT NOT NULL,
    source TEXT NOT NULL DEFAULT 'memory', start_line INTEGER NOT NULL,
    end_line INTEGER NOT NULL, hash TEXT NOT NULL, model TEXT NOT NULL, text TEXT NOT NULL,
    embedding BLOB, updated_at INTEGER NOT NULL, terms TEXT, term_count INTEGER
);
CREATE INDEX IF NOT EXISTS chunks_path ON chunks (path, source);
CREATE INDEX IF NOT EXISTS chunks_source ON chunks (source);
CREATE TABLE IF NOT EXISTS embedding_cache (
    provider TEXT NOT NULL, model TEXT NOT NULL, provider_key TEXT NOT NULL, hash TEXT NOT NULL,
    embedding BLOB NOT NULL, dims INTEGER NOT NULL, updated_at INTEGER NOT NULL,
    PRIMARY KEY (provider, model, provider_key, hash)
);
CREATE INDEX IF NOT EXISTS embedding_cache_updated ON embedding_cache (updated_at);
"""


class ChunkRow(msgspec.Struct, frozen=True):
    """A chunk ready to be written; ``embedding`` is a unit float32 vector or ``None``."""

    id: str
    start_line: int
    end_line: int
    hash: str
    text: str
    embedding: Vector | None


class FileState(msgspec.Struct, frozen=True):
    hash: str
    mtime: int
    size: int


#: A reader keeps decoded chunk rows between searches up to this many characters of chunk
#: text (a few megabytes), for the snapshot they were read in (:meth:`IndexStore._chunk_rows`).
ROW_CACHE_CHARS = 1_000_000


class _Row(NamedTuple):
    """A chunk as a keyword search reads it, decoded once per snapshot."""

    id: str
    path: str
    source: str
    start_line: int
    end_line: int
    text: str
    terms: ChunkTerms | None

    def candidate(self, text_score: float) -> Candidate:
        return Candidate(
            id=self.id,
            path=self.path,
            source=self.source,
            start_line=self.start_line,
            end_line=self.end_line,
            text=self.text,
            text_score=text_score,
            terms=self.terms,
        )


class IndexStore:
    """A connection to one index file plus the SQL memwell runs on it."""

    def __init__(
        self,
        path: Path,
        *,
        tokenizer: str = "unicode61",
        vector_enabled: bool = True,
        extension_path: str | None = None,
        read_only: bool = False,
    ) -> None:
        self.path = path
        self.tokenizer = tokenizer
        #: ``"read-write"``, ``"read-only"`` (``mode=ro``) or ``"immutable"``.
        self.access = "read-only" if read_only else "read-write"
        self.fts_error: str | None = None
        self._stats_version = -1
        self._stats: dict[str, int] = {}
        self._stats_pinned = False
        self._rows: dict[int, _Row] = {}
        self._row_chars = 0
        self._driver: DriverInfo | None = None
        self._vec_request = (vector_enabled, extension_path)
        if read_only:
            self._connect_read_only()
        else:
            self.conn = open_connection(path)
            self.conn.executescript(_SCHEMA)
            self._create_fts()
        # sqlite-vec loads here only when the index has its table; otherwise (an index built
        # without a model) on first use of :attr:`driver`, which a keyword search never makes.
        self.vec_dims = self._existing_vec_dims()
        version = self._stored_schema_version()
        #: Whether chunks carry their :class:`ChunkTerms` (an index before schema 4 does not;
        #: it is rebuilt by the next sync, and searched meanwhile with terms computed per hit).
        self.has_terms = (version is None or version >= CHUNK_TERMS_SCHEMA) and any(
            row[1] == "term_count" for row in self.conn.execute("PRAGMA table_info(chunks)")
        )
        #: Whether the FTS text holds CJK runs as ``segment_for_fts`` writes them (schema 3
        #: on), so a one-character CJK term is a prefix query; an older index (every unigram
        #: and bigram) is searched with plain terms until the next sync rebuilds it.
        self.cjk_prefixes = version is None or version >= CJK_PREFIX_SCHEMA

    def _connect_read_only(self) -> None:
        """Open without writing anything: ``mode=ro``, else ``immutable`` (read-only media)."""
        try:
            self.conn = open_connection(self.path, read_only="ro")
            self.conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
        except Exception:
            self.conn = open_connection(self.path, read_only="immutable")
            self.access = "immutable"
        if self._table_sql("chunks_fts") is None:
            self.fts_error = "the read-only index has no FTS table"

    def _stored_schema_version(self) -> int | None:
        """The schema version in the index's metadata; ``None`` for a new or unreadable one."""
        try:
            meta = self.read_meta()
        except Exception:
            return None
        version = None if meta is None else meta.get("schema_version")
        return version if isinstance(version, int) else None

    @property
    def driver(self) -> DriverInfo:
        """The SQLite module in use and how loading sqlite-vec went (loading it if not yet)."""
        if self._driver is None:
            load_vec, extension_path = self._vec_request
            self._driver = attach_vec(self.conn, load_vec=load_vec, extension_path=extension_path)
        return self._driver

    @property
    def info(self) -> DriverInfo:
        return self.driver

    def _create_fts(self) -> None:
        tokenize = _TOKENIZERS[self.tokenizer]
        try:
            self.conn.execute(
                "CREATE VIRTUAL TABLE IF NOT EXISTS chunks_fts "
                f"USING fts5(text, tokenize='{tokenize}')"
            )
        except Exception as exc:
            self.fts_error = f"{type(exc).__name__}: {exc}"

    @property
    def fts_available(self) -> bool:
        return self.fts_error is None

    def _table_sql(self, name: str) -> str | None:
        row = self.conn.execute("SELECT sql FROM sqlite_master WHERE name = ?", (name,)).fetchone()
        return None if row is None else str(row[0])

    def _fts_broken(self, exc: Exception) -> bool:
        """Record an FTS table that fails queries (a damaged config or shadow table).

        Returns whether ``exc`` was such a failure: a generic SQLite error on a query while
        the table cannot even be scanned. A query the table rejects (a syntax error), a busy
        database or a bug is the caller's to raise; corruption SQLite reports by its code is
        the index's, judged by the caller like any other.
        """
        if sqlite_errors.result_code(exc) != sqlite_errors.SQLITE_ERROR:
            return False
        try:
            self.conn.execute("SELECT rowid FROM chunks_fts LIMIT 1").fetchall()
        except Exception as probe:
            if sqlite_errors.is_contention(probe):
                return False
        else:
            return False
        self.fts_error = f"{FTS_DAMAGED}: {type(exc).__name__}: {exc}"
        return True

    def _existing_vec_dims(self) -> int | None:
        sql = self._table_sql("chunks_vec")
        if sql is None or not self.driver.vec_loaded:
            return None
        start = sql.index("float[") + len("float[")
        return int(sql[start : sql.index("]", start)])

    def ensure_vec_table(self, dims: int) -> None:
        """Create (or recreate for new dims) the sqlite-vec mirror of the chunk vectors."""
        if not self.driver.vec_loaded or self.vec_dims == dims:
            return
        self.conn.execute("DROP TABLE IF EXISTS chunks_vec")
        self.conn.execute(
            f"CREATE VIRTUAL TABLE chunks_vec USING vec0(embedding float[{dims}] "
            "distance_metric=cosine)"
        )
        self.vec_dims = dims

    def close(self) -> None:
        self.conn.close()

    # -- meta -------------------------------------------------------------------------------

    def read_meta(self) -> dict[str, Any] | None:
        row = self.conn.execute("SELECT value FROM meta WHERE key = ?", (META_KEY,)).fetchone()
        if row is None:
            return None
        try:
            data = json.loads(row[0])
        except ValueError as exc:
            raise IndexDamagedError(f"index metadata is unreadable: {exc}") from exc
        if not isinstance(data, dict):
            raise IndexDamagedError("index metadata is not an object")
        return data

    def write_meta(self, meta: dict[str, Any]) -> None:
        with self.conn:
            self.conn.execute(
                "INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)",
                (META_KEY, json.dumps({**meta, "schema_version": SCHEMA_VERSION})),
            )

    # -- files and chunks -------------------------------------------------------------------

    def file_states(self, source: str) -> dict[str, FileState]:
        rows = self.conn.execute(
            "SELECT path, hash, mtime, size FROM files WHERE source = ?", (source,)
        )
        return {path: FileState(h, m, s) for path, h, m, s in rows}

    def _delete_chunks(self, path: str, source: str) -> None:
        # Its own writes do not move this connection's data_version: the decoded rows go now.
        self._forget_rows()
        rowids = [
            r[0]
            for r in self.conn.execute(
                "SELECT rowid FROM chunks WHERE path = ? AND source = ?", (path, source)
            )
        ]
        if not rowids:
            return
        marks = ",".join("?" * len(rowids))
        if self.fts_available:
            self.conn.execute(f"DELETE FROM chunks_fts WHERE rowid IN ({marks})", rowids)
        if self.vec_dims is not None:
            self.conn.execute(f"DELETE FROM chunks_vec WHERE rowid IN ({marks})", rowids)
        self.conn.execute(f"DELETE FROM chunks WHERE rowid IN ({marks})", rowids)

    def replace_file(
        self,
        path: str,
        source: str,
        state: FileState,
        chunks: Sequence[ChunkRow],
        model: str,
    ) -> None:
        """Replace every chunk of one file and record its state (caller holds a transaction).

        Chunk ids are unique (:func:`~memwell.retrieval.chunking.chunk_ids`), so a plain
        ``INSERT`` either adds the chunk or fails the whole transaction: no chunk is ever
        replaced behind its FTS row's back. Its FTS and vector rows are written after
        deleting any row at its rowid (one an index written before ids were unique may hold),
        so they hold this chunk whatever the index held before.
        """
        self._delete_chunks(path, source)
        now = int(time.time() * 1000)
        for chunk in chunks:
            fts_text, terms = fts_text_and_terms(chunk.text)
            blob = (
                chunk.embedding.astype(np.float32).tobytes()
                if chunk.embedding is not None
                else None
            )
            cur = self.conn.execute(
                "INSERT INTO chunks (id, path, source, start_line, end_line, hash, "
                "model, text, embedding, updated_at, terms, term_count) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    chunk.id,
                    path,
                    source,
                    chunk.start_line,
                    chunk.end_line,
                    chunk.hash,
                    model,
                    chunk.text,
                    blob,
                    now,
                    *terms,
                ),
            )
            rowid = cur.lastrowid
            if self.fts_available:
                # unicode61 gets the NFC text, as queries and the chunk's terms are, segmented
                text = fts_text if self.tokenizer == "unicode61" else chunk.text
                self.conn.execute("DELETE FROM chunks_fts WHERE rowid = ?", (rowid,))
                self.conn.execute(
                    "INSERT INTO chunks_fts (rowid, text) VALUES (?, ?)", (rowid, text)
                )
            if blob is not None and self.vec_dims is not None:
                self.conn.execute("DELETE FROM chunks_vec WHERE rowid = ?", (rowid,))
                self.conn.execute(
                    "INSERT INTO chunks_vec (rowid, embedding) VALUES (?, ?)", (rowid, blob)
                )
        self.record_file(path, source, state)

    def merge_keyword_index(self) -> None:
        """Merge the FTS index into one b-tree (FTS5's ``optimize``; caller holds a transaction).

        Every committed transaction leaves FTS5 a segment, and each MATCH term is looked up in
        every segment: a first index of 1,000 notes leaves several, and merged, a Chinese
        question's MATCH takes half the time. The merge rewrites the whole FTS index, so the
        indexer runs it only after a bulk write.
        """
        if self.fts_available:
            self.conn.execute("INSERT INTO chunks_fts (chunks_fts) VALUES ('optimize')")

    def record_file(self, path: str, source: str, state: FileState) -> None:
        self.conn.execute(
            "INSERT OR REPLACE INTO files (path, source, hash, mtime, size) VALUES (?, ?, ?, ?, ?)",
            (path, source, state.hash, state.mtime, state.size),
        )

    def delete_file(self, path: str, source: str) -> None:
        self._delete_chunks(path, source)
        self.conn.execute("DELETE FROM files WHERE path = ? AND source = ?", (path, source))

    # -- embedding cache ---------------------------------------------------------------------

    def _cache_stamp(self) -> int:
        """A use time (ms) later than every stored one, so recency never ties."""
        latest = self.conn.execute("SELECT MAX(updated_at) FROM embedding_cache").fetchone()[0]
        return max(int(time.time() * 1000), int(latest or 0) + 1)

    def cache_get(
        self, provider: str, model: str, provider_key: str, hashes: Iterable[str]
    ) -> dict[str, Vector]:
        """Cached vectors by chunk hash; every hit's use time is refreshed (for LRU eviction)."""
        found: dict[str, Vector] = {}
        unique = list(dict.fromkeys(hashes))
        for i in range(0, len(unique), 400):
            part = unique[i : i + 400]
            marks = ",".join("?" * len(part))
            rows = self.conn.execute(
                "SELECT hash, embedding FROM embedding_cache WHERE provider = ? AND model = ? "
                f"AND provider_key = ? AND hash IN ({marks})",
                (provider, model, provider_key, *part),
            )
            for h, blob in rows:
                vec = np.frombuffer(blob, dtype=np.float32)
                if vec.size:
                    found[h] = vec
        hits = list(found)
        if hits:
            stamp = self._cache_stamp()
            for i in range(0, len(hits), 400):
                part = hits[i : i + 400]
                self.conn.execute(
                    "UPDATE embedding_cache SET updated_at = ? WHERE provider = ? AND model = ? "
                    f"AND provider_key = ? AND hash IN ({','.join('?' * len(part))})",
                    (stamp, provider, model, provider_key, *part),
                )
        return found

    def cache_put(
        self, provider: str, model: str, provider_key: str, items: dict[str, Vector]
    ) -> None:
        """Store vectors by chunk hash; ``updated_at`` is the entry's last use."""
        now = self._cache_stamp()
        self.conn.executemany(
            "INSERT OR REPLACE INTO embedding_cache (provider, model, provider_key, hash, "
            "embedding, dims, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
            [
                (provider, model, provider_key, h, v.astype(np.float32).tobytes(), v.size, now)
                for h, v in items.items()
            ],
        )

    def cache_count(self) -> int:
        return int(self.conn.execute("SELECT COUNT(*) FROM embedding_cache").fetchone()[0])

    def cache_prune(self, max_entries: int) -> int:
        """Delete the least recently used cache rows beyond ``max_entries``; returns how many."""
        excess = self.cache_count() - max_entries
        if excess <= 0:
            return 0
        with self.conn:
            self.conn.execute(
                "DELETE FROM embedding_cache WHERE rowid IN (SELECT rowid FROM embedding_cache "
                "ORDER BY updated_at ASC LIMIT ?)",
                (excess,),
            )
        return excess

    def copy_cache_from(self, other: Path) -> None:
        """Copy every embedding-cache row of another index file into this one."""
        self.conn.execute("ATTACH DATABASE ? AS old", (str(other),))
        try:
            with self.conn:
                self.conn.execute(
                    "INSERT OR IGNORE INTO embedding_cache SELECT * FROM old.embedding_cache"
                )
        finally:
            self.conn.execute("DETACH DATABASE old")

    # -- counts -----------------------------------------------------------------------------

    def source_counts(self) -> list[tuple[str, int, int]]:
        rows = self.conn.execute(
            "SELECT source, SUM(files), SUM(chunks) FROM ("
            " SELECT source, COUNT(*) AS files, 0 AS chunks FROM files GROUP BY source"
            " UNION ALL SELECT source, 0, COUNT(*) FROM chunks GROUP BY source"
            ") GROUP BY source ORDER BY source"
        )
        return [(s, int(f), int(c)) for s, f, c in rows]

    def vector_count(self) -> int:
        if self.vec_dims is not None:
            return int(self.conn.execute("SELECT COUNT(*) FROM chunks_vec").fetchone()[0])
        return int(
            self.conn.execute("SELECT COUNT(*) FROM chunks WHERE embedding IS NOT NULL").fetchone()[
                0
            ]
        )

    # -- search -----------------------------------------------------------------------------

    def keyword_search(
        self, query: FtsQuery, limit: int, sources: Sequence[str], *, prefetch: int | None = None
    ) -> list[Candidate]:
        """BM25 over the FTS table; ``text_score`` is the spec's rank-to-score mapping.

        The ``prefetch`` best rows are ranked first, so the cost of reading chunks does not
        grow with how many rows match an OR query; ``prefetch`` should exceed ``limit`` when
        ``sources`` filters. SQLite's own sorter picks them (``bm25()``, ties by rowid): FTS5's
        ``ORDER BY rank`` runs a nested statement of its own, 40% slower for a few dozen
        matching rows and for twenty thousand alike. Their chunks come from the rows decoded
        for earlier searches of the same snapshot (:meth:`_chunk_rows`).
        """
        if not self.fts_available:
            return []
        if query.match and not query.like_terms:
            try:
                with self.one_snapshot():
                    ranked = self.conn.execute(
                        "SELECT rowid, bm25(chunks_fts) FROM chunks_fts WHERE chunks_fts "
                        "MATCH ? ORDER BY 2, rowid LIMIT ?",
                        (query.match, max(limit, prefetch or limit)),
                    ).fetchall()
                    rows = self._chunk_rows([rowid for rowid, _ in ranked])
            except Exception as exc:
                if self._fts_broken(exc):
                    return []
                raise
            wanted = set(sources)
            found: list[Candidate] = []
            for rowid, rank in ranked:
                row = rows.get(rowid)
                if row is not None and row.source in wanted:
                    found.append(row.candidate(bm25_rank_to_score(float(rank))))
                    if len(found) == limit:
                        break
            return found
        return self._keyword_search_like(query, limit, sources)

    def _keyword_search_like(
        self, query: FtsQuery, limit: int, sources: Sequence[str]
    ) -> list[Candidate]:
        """:meth:`keyword_search` of a query with LIKE terms (trigram tokenizer) or none."""
        src_marks = ",".join("?" * len(sources))
        terms = "c.terms, c.term_count" if self.has_terms else "NULL, NULL"
        columns = "c.id, c.path, c.source, c.start_line, c.end_line, c.text"
        params: list[Any] = []
        if query.match:
            sql = (
                f"SELECT {columns}, f.rank, {terms} "
                "FROM chunks_fts f JOIN chunks c ON c.rowid = f.rowid "
                "WHERE chunks_fts MATCH ?"
            )
            params.append(query.match)
        else:
            sql = f"SELECT {columns}, 0.0, {terms} FROM chunks c WHERE 1 = 1"
        for term in query.like_terms:
            sql += " AND c.text LIKE ? ESCAPE '\\'"
            params.append(term)
        sql += f" AND c.source IN ({src_marks})"
        params.extend(sources)
        sql += " ORDER BY 7 ASC LIMIT ?" if query.match else " LIMIT ?"
        params.append(limit)
        try:
            rows = self.conn.execute(sql, params).fetchall()
        except Exception as exc:
            if self._fts_broken(exc):
                return []
            raise
        return [
            Candidate(
                id=cid,
                path=path,
                source=src,
                start_line=s,
                end_line=e,
                text=text,
                text_score=bm25_rank_to_score(float(rank)),
                terms=None if words is None else ChunkTerms(words, count),
            )
            for cid, path, src, s, e, text, rank, words, count in rows
        ]

    def _chunk_rows(self, rowids: Sequence[int]) -> dict[int, _Row]:
        """The chunks ``rowids`` (those that exist), decoded once per snapshot: a reader keeps
        up to :data:`ROW_CACHE_CHARS` characters of chunk text between searches, so a chunk
        found again is not read and decoded again (call within :meth:`one_snapshot`)."""
        self._stats_cache()  # drops the rows of an older snapshot
        cached = self._rows
        missing = [rowid for rowid in rowids if rowid not in cached]
        if missing:
            terms = "terms, term_count" if self.has_terms else "NULL, NULL"
            marks = ",".join("?" * len(missing))
            fetched = self.conn.execute(
                f"SELECT rowid, id, path, source, start_line, end_line, text, {terms} "
                f"FROM chunks WHERE rowid IN ({marks})",
                missing,
            ).fetchall()
            if self._row_chars > ROW_CACHE_CHARS:
                # Over budget: start again from this call's rows (the cached ones it asks for
                # are kept, or this call would lose them).
                self._forget_rows()
                for rowid in rowids:
                    if (row := cached.get(rowid)) is not None:
                        self._keep_row(rowid, row)
                cached = self._rows
            for rowid, cid, path, src, s, e, text, words, count in fetched:
                chunk_terms = None if words is None else ChunkTerms(words, count)
                self._keep_row(rowid, _Row(cid, path, src, s, e, text, chunk_terms))
        return {rowid: cached[rowid] for rowid in rowids if rowid in cached}

    def _keep_row(self, rowid: int, row: _Row) -> None:
        self._rows[rowid] = row
        self._row_chars += len(row.text)

    def load_vectors(self, model: str) -> tuple[np.ndarray[Any, Any], Matrix]:
        """Every chunk vector of ``model`` as (rowids, unit float32 matrix)."""
        rows = self.conn.execute(
            "SELECT rowid, embedding FROM chunks WHERE model = ? AND embedding IS NOT NULL",
            (model,),
        ).fetchall()
        if not rows:
            return np.zeros(0, dtype=np.int64), np.zeros((0, 0), dtype=np.float32)
        rowids = np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))
        matrix = np.frombuffer(b"".join(r[1] for r in rows), dtype=np.float32).reshape(
            len(rows), -1
        )
        return rowids, matrix

    def vectors_of(self, ids: Sequence[str], model: str) -> dict[str, Vector]:
        """The stored unit vectors of the chunks ``ids`` embedded with ``model``, by id (a
        chunk without one is left out)."""
        if not ids:
            return {}
        marks = ",".join("?" * len(ids))
        rows = self.conn.execute(
            f"SELECT id, embedding FROM chunks WHERE id IN ({marks}) AND model = ? "
            "AND embedding IS NOT NULL",
            (*ids, model),
        )
        return {cid: np.frombuffer(blob, dtype=np.float32) for cid, blob in rows}

    def file_vectors(
        self, files: Iterable[tuple[str, str]], model: str
    ) -> dict[tuple[str, str], Vector]:
        """The mean vector (:func:`~memwell.retrieval.file_similarity.mean_vector`) of each
        (path, source) in ``files`` over its chunks embedded with ``model``."""
        wanted = set(files)
        if not wanted:
            return {}
        paths = sorted({path for path, _ in wanted})
        marks = ",".join("?" * len(paths))
        rows = self.conn.execute(
            f"SELECT path, source, embedding FROM chunks WHERE path IN ({marks}) AND model = ? "
            "AND embedding IS NOT NULL",
            (*paths, model),
        )
        blobs: dict[tuple[str, str], list[bytes]] = {}
        for path, source, blob in rows:
            if (path, source) in wanted:
                blobs.setdefault((path, source), []).append(blob)
        out: dict[tuple[str, str], Vector] = {}
        for key, parts in blobs.items():
            rows_of_file = np.frombuffer(b"".join(parts), dtype=np.float32)
            mean = mean_vector(rows_of_file.reshape(len(parts), -1))
            if mean is not None:
                out[key] = mean
        return out

    def vec_knn(self, vector: Vector, limit: int) -> list[tuple[int, float]]:
        """(rowid, cosine similarity) via sqlite-vec's KNN."""
        rows = self.conn.execute(
            "SELECT rowid, distance FROM chunks_vec WHERE embedding MATCH ? AND k = ?",
            (vector.astype(np.float32).tobytes(), limit),
        )
        return [(int(r), 1.0 - float(d)) for r, d in rows]

    def chunks_by_rowid(
        self, rowids: Sequence[int], sources: Sequence[str]
    ) -> list[tuple[int, Candidate]]:
        """The chunks with these rowids (in that order) that belong to ``sources``."""
        if not rowids:
            return []
        with self.one_snapshot():
            rows = self._chunk_rows(rowids)
        wanted = set(sources)
        return [
            (rowid, row.candidate(0.0))
            for rowid in rowids
            if (row := rows.get(rowid)) is not None and row.source in wanted
        ]

    def data_version(self) -> int:
        """SQLite's ``data_version`` of this connection, which moves whenever another
        connection commits; within :meth:`one_snapshot`, the one read at its start."""
        if self._stats_pinned:
            return self._stats_version
        return int(self.conn.execute("PRAGMA data_version").fetchone()[0])

    def _stats_cache(self) -> dict[str, int]:
        """Per-snapshot cache: cleared whenever another connection commits."""
        version = self.data_version()
        if version != self._stats_version:
            self._stats_version = version
            self._stats = {}
            self._forget_rows()
        return self._stats

    def _forget_rows(self) -> None:
        self._rows = {}
        self._row_chars = 0

    @contextmanager
    def one_snapshot(self) -> Iterator[None]:
        """Within, every read sees one snapshot of the index (a read transaction, unless one
        is open), and :meth:`data_version` is read once: the per-snapshot statistics
        (:meth:`chunk_total`, :meth:`doc_frequencies`), the decoded chunk rows and the vector
        matrix are checked against it once. One search's reads share them; a commit made
        meanwhile is seen by the next search."""
        if self._stats_pinned:
            yield
            return
        began = not self.conn.in_transaction
        if began:
            self.conn.execute("BEGIN")
        try:
            self._stats_cache()
            self._stats_pinned = True
            yield
        finally:
            self._stats_pinned = False
            if began:
                self.conn.rollback()  # it only read

    def doc_frequencies(self, terms: Sequence[str], cap: int) -> dict[str, int]:
        """How many chunks match each quoted term, counting at most ``cap`` (cached)."""
        cache = self._stats_cache()
        out: dict[str, int] = {}
        for term in terms:
            key = f"df:{cap}:{term}"
            if key not in cache:
                try:
                    row = self.conn.execute(
                        "SELECT count(*) FROM (SELECT 1 FROM chunks_fts WHERE chunks_fts "
                        "MATCH ? LIMIT ?)",
                        (fts_phrase(term, self.cjk_prefixes), cap),
                    ).fetchone()
                except Exception as exc:
                    if self._fts_broken(exc):
                        return {}
                    raise
                cache[key] = int(row[0])
            out[term] = cache[key]
        return out

    def has_chunks(self) -> bool:
        return self.conn.execute("SELECT 1 FROM chunks LIMIT 1").fetchone() is not None

    def chunk_total(self) -> int:
        """Chunk count, cached per snapshot."""
        cache = self._stats_cache()
        if "chunks" not in cache:
            cache["chunks"] = self.chunk_count()
        return cache["chunks"]

    def chunk_count(self) -> int:
        return int(self.conn.execute("SELECT COUNT(*) FROM chunks").fetchone()[0])
