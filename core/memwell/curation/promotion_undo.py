"""Undoing the last promotion: MEMORY.md back to its bytes before it, or a clear refusal.

Each promotion that writes saves, in ``<index_dir>/promotion-undo.json``, the memory file's
bytes before it (or that it did not exist) and the SHA-256 of its bytes after, with the
promoted lines and their provenance; every promotion's provenance is also appended to
``<index_dir>/promotions.jsonl`` (source line, score, recalls, queries), so MEMORY.md itself
holds only the facts. :func:`undo_last` restores the file only while it still holds exactly
what the promotion left; otherwise it refuses and changes nothing.
"""

from __future__ import annotations

import base64
import hashlib
import os
from datetime import datetime
from pathlib import Path

import msgspec

from memwell.contract.config import MemwellSettings
from memwell.contract.errors import MemwellError
from memwell.contract.records import Record
from memwell.writing.atomic import read_state, replace_file, write_lock
from memwell.writing.targets import resolve_write_path
from memwell.writing.writer import LOCK_FILE_NAME as WRITE_LOCK_FILE_NAME

UNDO_FILE_NAME = "promotion-undo.json"
LOG_FILE_NAME = "promotions.jsonl"


class PromotedLine(Record, kw_only=True):
    """A line a promotion writes: ``text`` as it goes into MEMORY.md, its source line
    (``path#Ln``), the chunk's key and score, and how often searches matched the line
    best (``recalls``) with how many distinct queries (``queries``)."""

    text: str
    source: str
    key: str
    score: float
    recalls: int
    queries: int


class UndoRecord(msgspec.Struct):
    """What :func:`undo_last` needs: the file, its bytes before (base64), whether it existed,
    the SHA-256 of its bytes after, when, and what was promoted."""

    memory_file: str
    existed: bool
    before: str
    after_sha256: str
    at: str
    lines: list[PromotedLine]


class UndoResult(Record, kw_only=True):
    """An undone promotion: the file restored (``removed`` when the promotion created it) and
    the lines taken out."""

    memory_file: str
    promoted_at: str
    removed: bool
    lines: list[PromotedLine]


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _undo_path(workspace: Path, settings: MemwellSettings) -> Path:
    return workspace / settings.index_dir / UNDO_FILE_NAME


def save_undo(
    workspace: Path,
    settings: MemwellSettings,
    memory_file: str,
    before: bytes | None,
    after: bytes,
    lines: list[PromotedLine],
    at: datetime,
) -> None:
    """Record a promotion for :func:`undo_last` and append its provenance to the log."""
    record = UndoRecord(
        memory_file=memory_file,
        existed=before is not None,
        before=base64.b64encode(before or b"").decode("ascii"),
        after_sha256=_sha256(after),
        at=at.isoformat(timespec="seconds"),
        lines=lines,
    )
    path = _undo_path(workspace, settings)
    path.parent.mkdir(parents=True, exist_ok=True)
    temp = path.with_suffix(".tmp")
    temp.write_bytes(msgspec.json.encode(record))
    os.replace(temp, path)
    with open(path.parent / LOG_FILE_NAME, "ab") as log:
        for line in lines:
            entry = {"at": record.at, "memory_file": memory_file, **line.model_dump(mode="json")}
            log.write(msgspec.json.encode(entry) + b"\n")


def undo_last(workspace: Path, settings: MemwellSettings) -> tuple[UndoResult, list[str]]:
    """Restore the memory file to its bytes before the last promotion; the result and the
    promoted chunks' keys.

    :raises MemwellError: no promotion to undo, or the file changed since (nothing changed).
    """
    path = _undo_path(workspace, settings)
    try:
        record = msgspec.json.decode(path.read_bytes(), type=UndoRecord)
    except FileNotFoundError:
        raise MemwellError("no promotion to undo") from None
    except msgspec.DecodeError as exc:
        raise MemwellError(f"cannot read {path}: {exc}") from None
    real, display = resolve_write_path(workspace, record.memory_file)
    lock = workspace / settings.index_dir / WRITE_LOCK_FILE_NAME
    with write_lock(lock, settings.write.lock_timeout_seconds):
        state = read_state(real)
        if not state.exists or _sha256(state.data) != record.after_sha256:
            raise MemwellError(
                f"{display} changed since the promotion of {record.at}; undo refused, nothing "
                "changed (edit the promoted lines out by hand)"
            )
        if record.existed:
            replace_file(real, base64.b64decode(record.before), state)
        else:
            real.unlink()
    path.unlink()
    result = UndoResult(
        memory_file=display,
        promoted_at=record.at,
        removed=not record.existed,
        lines=record.lines,
    )
    return result, sorted({line.key for line in record.lines})
