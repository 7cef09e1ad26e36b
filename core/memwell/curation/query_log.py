"""The query log of the recall sidecar: when each answered search was asked.

One row per search that returned hits: its UTC time, the local day and hour it was asked, and
its text. Time-of-day warm-up (:mod:`memwell.recall.warmup`) learns from it which questions a
morning (or evening...) usually asks. A query that holds something shaped like a secret
(:func:`~memwell.sources.redact.redact` would change it) is not logged. The log keeps the
latest :data:`MAX_LOGGED_QUERIES` rows.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Collection, Iterable
from datetime import datetime, timezone

import msgspec

from memwell.sources.redact import redact

MAX_LOGGED_QUERIES = 20_000
"""Rows kept; older ones are dropped as new ones come."""

SCHEMA = """
CREATE TABLE IF NOT EXISTS queries (
    at TEXT NOT NULL,
    day TEXT NOT NULL,
    hour INTEGER NOT NULL,
    query TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS queries_hour ON queries(hour);
"""


class AskedQuery(msgspec.Struct, frozen=True):
    """A logged search: UTC time, local day (``YYYY-MM-DD``) and hour, the query."""

    at: str
    day: str
    hour: int
    query: str


def asked_at(moment: datetime, query: str) -> AskedQuery:
    """The log row of ``query`` asked at ``moment`` (timezone-aware, local time)."""
    utc = moment.astimezone(timezone.utc).isoformat(timespec="seconds").replace("+00:00", "Z")
    return AskedQuery(utc, moment.date().isoformat(), moment.hour, query.strip())


def log_queries(conn: sqlite3.Connection, asked: Iterable[AskedQuery]) -> None:
    """Append ``asked`` (secret-shaped queries left out), then drop the oldest rows beyond
    :data:`MAX_LOGGED_QUERIES` (in the caller's transaction)."""
    rows = [(a.at, a.day, a.hour, a.query) for a in asked if a.query and redact(a.query) == a.query]
    if not rows:
        return
    conn.executemany("INSERT INTO queries (at, day, hour, query) VALUES (?, ?, ?, ?)", rows)
    conn.execute(
        "DELETE FROM queries WHERE rowid <= (SELECT MAX(rowid) FROM queries) - ?",
        (MAX_LOGGED_QUERIES,),
    )


def read_queries(conn: sqlite3.Connection, hours: Collection[int]) -> list[AskedQuery]:
    """The logged searches asked at one of the local ``hours``, oldest first."""
    marks = ", ".join("?" * len(hours))
    rows = conn.execute(
        f"SELECT at, day, hour, query FROM queries WHERE hour IN ({marks}) ORDER BY rowid",
        sorted(hours),
    ).fetchall()
    return [AskedQuery(str(at), str(day), int(hour), str(q)) for at, day, hour, q in rows]
