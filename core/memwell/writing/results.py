"""What the writer returns: :class:`WriteResult` for a write (with a :class:`Supersession` for
each older line it superseded), :class:`RecentFile` for activity."""

from __future__ import annotations

from datetime import datetime
from typing import Literal

import msgspec

from memwell.contract.records import Record

Operation = Literal["append", "create", "replace", "supersede"]


class Supersession(Record, kw_only=True):
    """An older line that a write supersedes: where it is, its text, the newer line's
    citation, the attribute and both values; ``marked`` says whether the marker was written
    (``false`` in ``suggest`` mode)."""

    path: str
    line: int
    text: str
    by: str
    attribute: str
    old_value: str
    new_value: str
    marked: bool = False


class WriteResult(Record, kw_only=True):
    """One completed write.

    ``start_line``..``end_line`` (1-based, inclusive) is where the written text now lies;
    ``bytes_written`` is its UTF-8 size after redaction. ``indexed`` is true when the
    manager's sync succeeded before the call returned; otherwise ``index_error`` says why (the
    file is written either way, and the next sync picks it up). ``superseded`` lists the older
    lines the written text states a new value for (marked unless ``[write] supersede =
    "suggest"``; see :mod:`memwell.retrieval.supersede_marker`); ``supersede_error`` says why the
    lookup or a marker failed (the note is written either way). ``audit_error`` says why the
    write's line could not be added to ``memory/meta/audit.log`` (the write stands).
    """

    path: str
    operation: Operation
    start_line: int
    end_line: int
    bytes_written: int
    file_bytes: int
    created: bool = False
    heading_created: bool = False
    redacted: bool = False
    indexed: bool
    index_error: str | None = None
    superseded: list[Supersession] = msgspec.field(default_factory=list)
    supersede_error: str | None = None
    audit_error: str | None = None


class RecentFile(Record, kw_only=True):
    """A memory file and when it last changed (UTC)."""

    path: str
    modified: datetime
    bytes: int
