"""Recall tracking: which chunks each search returned, in a sidecar of the index directory.

The port of the reference's short-term recall store. For every hit a search returns, the
entry of that chunk (``source:path:start:end``) counts one more recall, adds the hit's score
to its total and its maximum, remembers the query's hash (the last 32) and the day (the last
16 distinct local dates), refreshes its snippet and concept tags, and sets its first and last
recall times. Each recall also counts, per line, the chunk's lines that matched the query best
(:func:`recalled_lines`; ``line_hits``), so that promotion copies the lines searches were
after, not their neighbours. ``daily_count`` is the number of recalls on the entry's latest
recall day. A
later :meth:`~RecallTracker.record_read` of lines that overlap a recalled chunk (the agent's
``memory_get``, ``memwell get``) grounds it: ``grounded_count`` goes up and the chunk's mean
score is added once more, so grounding raises frequency and consolidation without changing
relevance.

Each search that returned hits is also logged with its time and text
(:mod:`memwell.curation.query_log`), for time-of-day warm-up.

The sidecar is ``<index_dir>/recall-tracking.sqlite``: derived data (deleting it loses only
the recall history), written by a background thread (a search never waits for it) in short
``BEGIN IMMEDIATE`` transactions in WAL mode, so any number of processes can record at once.
A failure never breaks a search or a read: it is logged once per distinct error and reported
in ``status().recall_tracking``.
"""

from __future__ import annotations

import atexit
import contextlib
import hashlib
import itertools
import sqlite3
import threading
import time
from collections.abc import Callable, Collection, Iterable, Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path

import msgspec

from memwell.contract.config import MemwellSettings
from memwell.contract.models import MemorySearchResult, ReadFileResult, RecallTrackingStatus
from memwell.curation import query_log
from memwell.curation.query_log import AskedQuery, asked_at
from memwell.retrieval.keywords import iter_keywords
from memwell.retrieval.snippets import bare_snippet
from memwell.util.lazy_import import lazy_logger

log = lazy_logger(__name__)

SIDECAR_NAME = "recall-tracking.sqlite"
MAX_QUERY_HASHES = 32
MAX_RECALL_DAYS = 16
MAX_CONCEPT_TAGS = 8
#: Entries read per statement when a job's hits are counted (under SQLite's variable limit).
_KEYS_PER_READ = 500
#: How long the writer thread waits for another process's write (searches never wait).
BUSY_TIMEOUT_MS = 10_000
#: The writer waits until no search or read has been queued for this long before it writes,
#: so that back-to-back searches never share the cores (and the GIL) with its SQLite work:
#: writing each search's recordings at once added about 2.4 ms of CPU to the next search. It
#: looks at the queue once per period instead of being woken by every job (a thread switch per
#: search), and counts a batch's searches with one read and one write of their entries.
QUIET_SECONDS = 0.2
#: ... but writes at the latest this long after the first job it holds was queued.
MAX_DELAY_SECONDS = 2.0

Clock = Callable[[], datetime]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS recalls (
    key TEXT PRIMARY KEY,
    path TEXT NOT NULL,
    start_line INTEGER NOT NULL,
    end_line INTEGER NOT NULL,
    source TEXT NOT NULL,
    snippet TEXT NOT NULL,
    recall_count INTEGER NOT NULL,
    daily_count INTEGER NOT NULL,
    grounded_count INTEGER NOT NULL,
    total_score REAL NOT NULL,
    max_score REAL NOT NULL,
    first_recalled_at TEXT NOT NULL,
    last_recalled_at TEXT NOT NULL,
    query_hashes TEXT NOT NULL,
    recall_days TEXT NOT NULL,
    concept_tags TEXT NOT NULL,
    promoted_at TEXT,
    line_hits TEXT NOT NULL DEFAULT '{}'
);
CREATE INDEX IF NOT EXISTS recalls_path ON recalls(path);
"""
_COLUMNS = (
    "key, path, start_line, end_line, source, snippet, recall_count, daily_count, "
    "grounded_count, total_score, max_score, first_recalled_at, last_recalled_at, "
    "query_hashes, recall_days, concept_tags, promoted_at, line_hits"
)
#: Distinct query hashes kept per recalled line.
MAX_LINE_QUERIES = 16


class LineEvidence(msgspec.Struct):
    """One line of a chunk that searches matched: its text then, how often it was the
    chunk's best match for a query, and by which queries (their hashes, the last 16)."""

    text: str
    count: int = 0
    queries: list[str] = msgspec.field(default_factory=list)


_JSON = msgspec.json.Encoder()
_STRINGS = msgspec.json.Decoder(list[str])
_LINES = msgspec.json.Decoder(dict[str, LineEvidence])


def query_hash(query: str) -> str:
    """The reference's query hash: SHA-1 of the lowercased, trimmed query, 12 hex digits."""
    return hashlib.sha1(query.strip().lower().encode("utf-8")).hexdigest()[:12]


def entry_key(source: str, path: str, start_line: int, end_line: int) -> str:
    """The chunk's key: ``source:path:start:end``."""
    return f"{source}:{path}:{start_line}:{end_line}"


def concept_tags(path: str, snippet: str) -> list[str]:
    """Up to 8 distinct keywords of the snippet (stop words, numbers and short words out)."""
    del path  # the reference also mines the path; memwell's paths are dates and topics
    tags = (t for t in iter_keywords(snippet) if len(t) >= 3 or not t.isascii())
    return list(itertools.islice(tags, MAX_CONCEPT_TAGS))


def recalled_lines(snippet: str, start_line: int, query: str) -> list[tuple[int, str]]:
    """The lines of a hit's ``snippet`` (its first line is ``start_line``) that match
    ``query`` best: most of its keywords, at least one. Headings are never recalled lines."""
    wanted = set(iter_keywords(query))
    if not wanted:
        return []
    scored: list[tuple[int, int, str]] = []
    for offset, line in enumerate(snippet.split("\n")):
        text = line.rstrip("\r")
        if not text.strip() or text.lstrip().startswith("#"):
            continue
        matched = len(wanted.intersection(iter_keywords(text)))
        if matched:
            scored.append((matched, start_line + offset, text))
    best = max((m for m, _, _ in scored), default=0)
    return [(number, text) for matched, number, text in scored if matched == best]


def _recent_distinct(values: Sequence[str], new: str, limit: int) -> list[str]:
    kept = [v for v in dict.fromkeys(values) if v and v != new]
    return [*kept, new][-limit:]


class RecallEntry(msgspec.Struct):
    """One tracked chunk (the reference's short-term recall entry)."""

    key: str
    path: str
    start_line: int
    end_line: int
    source: str
    snippet: str
    recall_count: int = 0
    daily_count: int = 0
    grounded_count: int = 0
    total_score: float = 0.0
    max_score: float = 0.0
    first_recalled_at: str = ""
    last_recalled_at: str = ""
    query_hashes: list[str] = msgspec.field(default_factory=list)
    recall_days: list[str] = msgspec.field(default_factory=list)
    concept_tags: list[str] = msgspec.field(default_factory=list)
    promoted_at: str | None = None
    line_hits: dict[str, LineEvidence] = msgspec.field(default_factory=dict)

    @property
    def signal_count(self) -> int:
        """Recalls plus grounded reads (``daily_count`` is a part of ``recall_count``)."""
        return self.recall_count + self.grounded_count

    def _row(self) -> tuple[object, ...]:
        return (
            self.key,
            self.path,
            self.start_line,
            self.end_line,
            self.source,
            self.snippet,
            self.recall_count,
            self.daily_count,
            self.grounded_count,
            self.total_score,
            self.max_score,
            self.first_recalled_at,
            self.last_recalled_at,
            _JSON.encode(self.query_hashes).decode(),
            _JSON.encode(self.recall_days).decode(),
            _JSON.encode(self.concept_tags).decode(),
            self.promoted_at,
            _JSON.encode(self.line_hits).decode(),
        )

    @classmethod
    def _from_row(cls, row: Sequence[object]) -> RecallEntry:
        values = list(row)
        for index in (13, 14, 15):
            values[index] = _STRINGS.decode(str(values[index]))
        values[17] = _LINES.decode(str(values[17] or "{}"))
        return cls(*values)  # type: ignore[arg-type]


def _save(conn: sqlite3.Connection, entries: Iterable[RecallEntry]) -> None:
    conn.executemany(
        f"INSERT OR REPLACE INTO recalls ({_COLUMNS}) VALUES ({', '.join('?' * 18)})",
        (entry._row() for entry in entries),
    )


def _recall(
    entry: RecallEntry, when: _When, query: str, qhash: str, hit: MemorySearchResult
) -> None:
    """Count one recall of ``entry`` by ``query`` (hash ``qhash``) at ``when``."""
    same_day = bool(entry.recall_days) and entry.recall_days[-1] == when.day
    entry.daily_count = entry.daily_count + 1 if same_day else 1
    entry.recall_count += 1
    entry.total_score += hit.score
    entry.max_score = max(entry.max_score, hit.score)
    entry.last_recalled_at = when.now
    snippet = bare_snippet(hit) or entry.snippet
    if snippet != entry.snippet or not entry.concept_tags:  # else its tags are this one's
        entry.concept_tags = concept_tags(hit.path, snippet) or entry.concept_tags
    entry.snippet = snippet
    for number, text in recalled_lines(snippet, hit.start_line, query):
        line = entry.line_hits.get(str(number))
        if line is None or line.text != text:  # a new line, or the file changed under it
            line = entry.line_hits[str(number)] = LineEvidence(text)
        line.count += 1
        line.queries = _recent_distinct(line.queries, qhash, MAX_LINE_QUERIES)
    entry.query_hashes = _recent_distinct(entry.query_hashes, qhash, MAX_QUERY_HASHES)
    entry.recall_days = _recent_distinct(entry.recall_days, when.day, MAX_RECALL_DAYS)


class _When(msgspec.Struct, frozen=True):
    """A recording's time: UTC ISO timestamp and local date."""

    now: str
    day: str

    @classmethod
    def of(cls, moment: datetime) -> _When:
        utc = moment.astimezone(timezone.utc).isoformat(timespec="milliseconds")
        return cls(utc.replace("+00:00", "Z"), moment.date().isoformat())


class _Searches(msgspec.Struct, frozen=True):
    """Searches to count, as the caller gave them: the writer thread derives keys and hashes."""

    moment: datetime
    searches: list[tuple[str, list[MemorySearchResult]]]


class _Read(msgspec.Struct, frozen=True):
    """A read of ``path`` lines ``first``..``last`` (``None``: to the end) to ground."""

    moment: datetime
    path: str
    first: int
    last: int | None


_Job = _Searches | _Read


class RecallTracker:
    """Records searches and reads of one workspace in its sidecar (see the module docstring).

    Recording never blocks the caller: each search or read is queued with its time and
    written by one background thread, in one transaction per batch of queued jobs, once the
    queue has been quiet for :data:`QUIET_SECONDS`. :meth:`flush` writes at once and waits for
    the queue (reading methods and :meth:`close` flush first, and so
    does the interpreter's exit).

    :param path: the sidecar file.
    :param clock: the current time, timezone-aware (default: now, local time); recall days
        are its local dates.
    """

    def __init__(self, path: Path, *, clock: Clock | None = None, log_queries: bool = True) -> None:
        self.path = path
        self.log_queries = log_queries
        self._clock = clock or (lambda: datetime.now().astimezone())
        self._lock = threading.Lock()
        self._conn: sqlite3.Connection | None = None
        self.last_error: str | None = None
        self._said: set[str] = set()
        self._idle = threading.Condition()  # guards the fields below; notified per write
        self._queued: list[_Job] = []
        self._pending = 0  # queued or being written
        self._submitted = 0  # ever queued: the writer sees whether the queue was quiet
        self._first_at = 0.0  # monotonic time the oldest queued job was queued
        self._wake = threading.Event()  # set when a job lands in an empty queue, or on flush
        self._now_please = threading.Event()  # set by flush: write without waiting
        self._writer: threading.Thread | None = None

    @classmethod
    def for_workspace(
        cls, workspace: Path, settings: MemwellSettings, *, clock: Clock | None = None
    ) -> RecallTracker:
        """The tracker of ``workspace``: ``<index_dir>/recall-tracking.sqlite``."""
        return cls(
            workspace / settings.index_dir / SIDECAR_NAME,
            clock=clock,
            log_queries=settings.cache.recall.query_log,
        )

    # -- the sidecar ------------------------------------------------------------------------

    def _connect(self) -> sqlite3.Connection:
        if self._conn is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            conn = sqlite3.connect(
                self.path,
                timeout=BUSY_TIMEOUT_MS / 1000,
                isolation_level=None,
                check_same_thread=False,
            )
            try:
                conn.execute("PRAGMA journal_mode=WAL")
                conn.execute("PRAGMA synchronous=NORMAL")
                conn.executescript(_SCHEMA + query_log.SCHEMA)
                columns = {row[1] for row in conn.execute("PRAGMA table_info(recalls)")}
                if "line_hits" not in columns:  # a sidecar from before line-level evidence
                    with contextlib.suppress(sqlite3.OperationalError):  # another process won
                        conn.execute(
                            "ALTER TABLE recalls ADD COLUMN line_hits TEXT NOT NULL DEFAULT '{}'"
                        )
            except BaseException:
                conn.close()
                raise
            self._conn = conn
        return self._conn

    @contextmanager
    def _transaction(self) -> Iterator[sqlite3.Connection]:
        with self._lock:
            conn = self._connect()
            conn.execute("BEGIN IMMEDIATE")
            try:
                yield conn
            except BaseException:
                conn.execute("ROLLBACK")
                raise
            conn.execute("COMMIT")

    def _failed(self, action: str, exc: Exception) -> None:
        self.last_error = f"{action} failed: {type(exc).__name__}: {exc}"
        if self.last_error not in self._said:
            self._said.add(self.last_error)
            log.warning("memwell: recall tracking %s (the search is not affected)", self.last_error)
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None

    def entries(self) -> list[RecallEntry]:
        """Every tracked chunk (raises if the sidecar cannot be read)."""
        self.flush()
        with self._lock:
            rows = self._connect().execute(f"SELECT {_COLUMNS} FROM recalls").fetchall()
        return [RecallEntry._from_row(row) for row in rows]

    def asked(self, hours: Collection[int]) -> list[AskedQuery]:
        """The logged searches asked at one of the local ``hours``
        (:mod:`memwell.curation.query_log`; raises if the sidecar cannot be read)."""
        self.flush()
        with self._lock:
            return query_log.read_queries(self._connect(), hours)

    def close(self) -> None:
        """Write what is queued, then close the sidecar connection (idempotent)."""
        self.flush()
        atexit.unregister(self.flush)
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None

    # -- the writer thread ------------------------------------------------------------------

    def _submit(self, job: _Job) -> None:
        """Queue ``job`` without waking the writer unless the queue was empty: a search pays
        for a list append, not for a thread switch."""
        with self._idle:
            self._pending += 1
            self._submitted += 1
            self._queued.append(job)
            if len(self._queued) == 1:
                self._first_at = time.monotonic()
                self._wake.set()
            if self._writer is None or not self._writer.is_alive():
                self._writer = threading.Thread(
                    target=self._write_loop, name="memwell-recall-tracking", daemon=True
                )
                self._writer.start()
                atexit.register(self.flush)

    def _take(self) -> list[_Job]:
        """The queued jobs, once the queue has been quiet for :data:`QUIET_SECONDS`, the
        oldest has waited :data:`MAX_DELAY_SECONDS` or a flush asks for them."""
        self._wake.wait()
        while not self._now_please.is_set():
            with self._idle:
                seen = self._submitted
                remaining = self._first_at + MAX_DELAY_SECONDS - time.monotonic()
            if remaining <= 0 or self._now_please.wait(min(QUIET_SECONDS, remaining)):
                break
            with self._idle:
                if self._submitted == seen:
                    break
        with self._idle:
            self._wake.clear()
            self._now_please.clear()
            jobs, self._queued = self._queued, []
        return jobs

    def _write_loop(self) -> None:
        while True:
            jobs = self._take()
            if not jobs:
                continue
            try:
                with self._transaction() as conn:
                    self._apply(conn, jobs)
            except Exception as exc:
                self._failed("recording", exc)
            with self._idle:
                self._pending -= len(jobs)
                self._idle.notify_all()

    def flush(self, timeout: float = 10.0) -> bool:
        """Write every queued recording now and wait for it; false on timeout."""
        with self._idle:
            if self._pending == 0:
                return True
        self._now_please.set()
        self._wake.set()
        with self._idle:
            return self._idle.wait_for(lambda: self._pending == 0, timeout)

    # -- recording --------------------------------------------------------------------------

    def record_search(self, query: str, results: Iterable[MemorySearchResult]) -> None:
        """Count one recall of each hit of ``query`` (never raises, never waits)."""
        self.record_searches([(query, results)])

    def record_searches(self, searches: Iterable[tuple[str, Iterable[MemorySearchResult]]]) -> None:
        """:meth:`record_search` for each ``(query, hits)``."""
        batch = [(query, list(hits)) for query, hits in searches if query.strip()]
        if any(hits for _, hits in batch):
            self._submit(_Searches(self._clock(), batch))

    def record_read(self, result: ReadFileResult, from_line: int | None, lines: int | None) -> None:
        """Ground every recalled chunk of the read file whose lines the read overlaps."""
        if result.missing or not result.text:
            return
        first = from_line or 1
        last = first + lines - 1 if lines else None
        self._submit(_Read(self._clock(), result.path, first, last))

    def _apply(self, conn: sqlite3.Connection, jobs: Sequence[_Job]) -> None:
        """Apply ``jobs`` in order, each run of searches with one read and one write."""
        run: list[_Searches] = []
        for job in jobs:
            if isinstance(job, _Searches):
                run.append(job)
                continue
            if run:
                self._recall_all(conn, run)
                run = []
            self._ground(conn, job)
        if run:
            self._recall_all(conn, run)

    def _recall_all(self, conn: sqlite3.Connection, jobs: Sequence[_Searches]) -> None:
        """Count every hit of the jobs' searches: one read of their entries, one write."""
        counted: list[tuple[_When, str, str, dict[str, MemorySearchResult]]] = []
        if self.log_queries:
            query_log.log_queries(
                conn, (asked_at(j.moment, q) for j in jobs for q, hits in j.searches if hits)
            )
        for job in jobs:
            when = _When.of(job.moment)
            counted.extend(
                (
                    when,
                    query,
                    query_hash(query),
                    {entry_key(r.source, r.path, r.start_line, r.end_line): r for r in hits},
                )
                for query, hits in job.searches
            )
        keys = list(dict.fromkeys(key for *_, hits in counted for key in hits))
        entries: dict[str, RecallEntry] = {}
        for start in range(0, len(keys), _KEYS_PER_READ):
            part = keys[start : start + _KEYS_PER_READ]
            rows = conn.execute(
                f"SELECT {_COLUMNS} FROM recalls WHERE key IN ({', '.join('?' * len(part))})",
                part,
            )
            entries.update((str(row[0]), RecallEntry._from_row(row)) for row in rows)
        for when, query, qhash, hits in counted:
            for key, hit in hits.items():
                entry = entries.get(key)
                if entry is None:
                    entry = entries[key] = RecallEntry(
                        key,
                        hit.path,
                        hit.start_line,
                        hit.end_line,
                        hit.source,
                        bare_snippet(hit),
                        first_recalled_at=when.now,
                    )
                _recall(entry, when, query, qhash, hit)
        _save(conn, entries.values())

    def _ground(self, conn: sqlite3.Connection, read: _Read) -> None:
        when = _When.of(read.moment)
        rows = conn.execute(
            f"SELECT {_COLUMNS} FROM recalls WHERE path = ? AND end_line >= ?"
            + (" AND start_line <= ?" if read.last is not None else ""),
            (read.path, read.first) if read.last is None else (read.path, read.first, read.last),
        ).fetchall()
        entries = [RecallEntry._from_row(row) for row in rows]
        for entry in entries:
            entry.total_score += entry.total_score / max(1, entry.signal_count)
            entry.grounded_count += 1
            entry.last_recalled_at = when.now
            entry.recall_days = _recent_distinct(entry.recall_days, when.day, MAX_RECALL_DAYS)
        _save(conn, entries)

    def unmark_promoted(self, keys: Iterable[str]) -> None:
        """Forget that these chunks were promoted (a promotion was undone)."""
        self.flush()
        with self._transaction() as conn:
            conn.executemany(
                "UPDATE recalls SET promoted_at = NULL WHERE key = ?", [(k,) for k in keys]
            )

    def mark_promoted(self, keys: Iterable[str]) -> None:
        """Record that these chunks were promoted into MEMORY.md now."""
        self.flush()
        now = _When.of(self._clock()).now
        with self._transaction() as conn:
            conn.executemany(
                "UPDATE recalls SET promoted_at = ? WHERE key = ?", [(now, k) for k in keys]
            )

    # -- status -----------------------------------------------------------------------------

    def status(self) -> RecallTrackingStatus:
        """The sidecar's state; an unreadable sidecar is reported, not raised."""
        self.flush()
        path = str(self.path)
        if not self.path.exists():
            return RecallTrackingStatus(enabled=True, path=path, error=self.last_error)
        try:
            with self._lock:
                count, promoted = (
                    self._connect()
                    .execute("SELECT COUNT(*), COUNT(promoted_at) FROM recalls")
                    .fetchone()
                )
        except Exception as exc:
            self._failed("reading the sidecar", exc)
            return RecallTrackingStatus(enabled=True, path=path, error=self.last_error)
        return RecallTrackingStatus(
            enabled=True, path=path, entries=count, promoted=promoted, error=self.last_error
        )
