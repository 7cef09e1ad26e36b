"""Child process of the crash trials: run one sync of a workspace, maybe freeze at an event.

Usage: ``python crash_child.py WORKSPACE full|incremental STOP SLEEP_MS``

Events are counted as the sync runs: every ``SQL_STEP`` SQLite VM instructions (a progress
handler on every index connection), every embedding batch, and the index-directory steps
(``os.replace`` of the pointer, publishing, discarding and cleaning up generations). When the
count reaches ``STOP`` (a number > 0), or at the first event of the kind ``STOP`` names,
the child prints ``stop <kind> <n>`` and blocks where it is, so the parent's SIGKILL lands
exactly there. With ``STOP`` 0 it runs to the end (the parent may kill it after a delay) and
prints ``done <events>``. ``SLEEP_MS`` slows each embedding batch.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import memwell_sqlite.store as store_module
from memwell.testing import HashEmbeddingProvider
from memwell_sqlite.layout import IndexDir
from reliability_helpers import build_manager, make_registry, make_settings

SQL_STEP = 50

workspace, mode, stop_spec, sleep_ms = Path(sys.argv[1]), sys.argv[2], sys.argv[3], int(sys.argv[4])
stop_at = int(stop_spec) if stop_spec.isdigit() else -1
events = 0


def say(line: str) -> None:
    os.write(1, (line + "\n").encode())


def event(kind: str) -> None:
    global events
    events += 1
    if kind != "sql":
        say(f"mark {kind} {events}")
    if events == stop_at or kind == stop_spec:
        say(f"stop {kind} {events}")
        while True:  # the parent's SIGKILL ends this
            time.sleep(60)


def on_sql() -> int:
    event("sql")
    return 0


original_open = store_module.open_connection


def open_connection(*args: Any, **kwargs: Any) -> Any:
    conn = original_open(*args, **kwargs)
    conn.set_progress_handler(on_sql, SQL_STEP)
    return conn


store_module.open_connection = open_connection


def wrap(owner: Any, name: str, before: str, after: str | None = None) -> None:
    original: Callable[..., Any] = getattr(owner, name)

    def wrapper(*args: Any, **kwargs: Any) -> Any:
        event(before)
        result = original(*args, **kwargs)
        if after:
            event(after)
        return result

    setattr(owner, name, wrapper)


wrap(os, "replace", "replace", "replaced")
wrap(IndexDir, "publish", "publish", "published")
wrap(IndexDir, "discard", "discard")
wrap(IndexDir, "cleanup", "cleanup", "cleaned")


def on_batch(texts: Sequence[str]) -> None:
    event("embed")
    if sleep_ms:
        time.sleep(sleep_ms / 1000)


provider = HashEmbeddingProvider()
provider.fail = on_batch
settings = make_settings()
manager = build_manager(workspace, settings, make_registry(provider=provider))
say("ready")
manager.sync(reason="crash-trial", force=mode == "full")
manager.close()
say(f"done {events}")
