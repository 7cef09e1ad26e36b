"""The provider fallback kept with an index, so a new process does not retry a failed primary.

When the configured provider fails and the configured ``fallback`` takes over, the backend's
index is rebuilt with the fallback's vectors. Without a record every new process would try
the primary again, fail, and re-embed everything a second time. :class:`FallbackRecord` is
stored as JSON next to the index (``provider-fallback.json``); until ``retry_at`` the runtime
goes straight to the fallback, then it probes the primary once. Each failed probe doubles the
wait (``fallback_retry_minutes``, doubling, capped at :data:`MAX_RETRY_SECONDS`); a successful
probe deletes the record. When the fallback fails too, the record says so (``keyword_only``):
until ``retry_at`` searches run by keyword only without trying either provider.
"""

from __future__ import annotations

import json
import os
import time
from datetime import datetime, timezone
from pathlib import Path

import msgspec

from memwell.util.lazy_import import lazy_logger

log = lazy_logger(__name__)

FALLBACK_FILE = "provider-fallback.json"
MAX_RETRY_SECONDS = 24 * 3600.0


class FallbackRecord(msgspec.Struct, frozen=True):
    """A primary provider that failed, the fallback serving instead, and when to retry."""

    primary: str
    fallback: str
    reason: str
    failures: int
    failed_at: float
    retry_at: float
    #: Why the fallback failed too, when searches run by keyword only until ``retry_at``.
    keyword_only: str | None = None

    def applies_to(self, primary: str, fallback: str) -> bool:
        """Whether this record is about the configured pair of providers."""
        return self.primary == primary and self.fallback == fallback

    def due(self, now: float | None = None) -> bool:
        """Whether the primary should be tried again."""
        return (time.time() if now is None else now) >= self.retry_at

    def describe(self) -> str:
        """The reason with when the primary is tried again, for status and payloads."""
        when = datetime.fromtimestamp(self.retry_at, timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
        reason = self.keyword_only or self.reason
        return f"{reason} (kept with the index; {self.primary!r} is tried again after {when})"


def retry_delay(failures: int, base_seconds: float) -> float:
    """Seconds to wait after ``failures`` consecutive failures: doubling, capped at 24 h."""
    return min(MAX_RETRY_SECONDS, base_seconds * 2.0 ** max(0, failures - 1))


def next_record(
    previous: FallbackRecord | None,
    primary: str,
    fallback: str,
    reason: str,
    base_seconds: float,
    now: float | None = None,
) -> FallbackRecord:
    """The record after one more failure of ``primary`` (counting on from ``previous``)."""
    at = time.time() if now is None else now
    failures = previous.failures + 1 if previous and previous.applies_to(primary, fallback) else 1
    return FallbackRecord(
        primary, fallback, reason, failures, at, at + retry_delay(failures, base_seconds)
    )


def load_record(path: Path) -> FallbackRecord | None:
    """The stored record, or ``None`` when there is none or it is unreadable (logged)."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        keyword_only = data.get("keyword_only")
        return FallbackRecord(
            primary=str(data["primary"]),
            fallback=str(data["fallback"]),
            reason=str(data["reason"]),
            failures=int(data["failures"]),
            failed_at=float(data["failed_at"]),
            retry_at=float(data["retry_at"]),
            keyword_only=None if keyword_only is None else str(keyword_only),
        )
    except FileNotFoundError:
        return None
    except (OSError, ValueError, KeyError, TypeError) as exc:
        log.warning("memwell: ignoring unreadable provider fallback record %s: %s", path, exc)
        return None


def save_record(path: Path, record: FallbackRecord) -> None:
    """Write ``record`` atomically; a failure (read-only index) is logged, not raised."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp.write_text(json.dumps(msgspec.structs.asdict(record), indent=2), encoding="utf-8")
        os.replace(tmp, path)
    except OSError as exc:
        log.warning("memwell: cannot record the provider fallback in %s: %s", path, exc)
        tmp.unlink(missing_ok=True)


def clear_record(path: Path) -> None:
    """Delete the record (the primary works again)."""
    try:
        path.unlink(missing_ok=True)
    except OSError as exc:
        log.warning("memwell: cannot remove the provider fallback record %s: %s", path, exc)
