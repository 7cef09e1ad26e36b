"""The JSON index file: pydantic models, validated on load and written atomically."""

from __future__ import annotations

import logging
import os
import tempfile
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field, ValidationError

log = logging.getLogger(__name__)

INDEX_VERSION = 1


class IndexedChunk(BaseModel):
    """One chunk: its 1-based inclusive lines, text, hash and (with a provider) its vector."""

    start_line: int
    end_line: int
    text: str
    hash: str
    vector: list[float] | None = None


class IndexedFile(BaseModel):
    """One Markdown file as it was when indexed."""

    path: str
    mtime_ns: int
    size: int
    hash: str
    chunks: list[IndexedChunk]


class JsonIndex(BaseModel):
    """The whole index. ``identity`` records what the chunks and vectors were built with."""

    identity: dict[str, Any] = Field(default_factory=dict)
    files: dict[str, IndexedFile] = Field(default_factory=dict)

    @classmethod
    def load(cls, path: Path) -> JsonIndex:
        """Read the index; a missing or damaged file gives an empty index (rebuilt on sync)."""
        try:
            return cls.model_validate_json(path.read_bytes())
        except FileNotFoundError:
            return cls()
        except (OSError, ValidationError) as exc:
            log.warning("memwell-jsonfile: ignoring unreadable index %s: %s", path, exc)
            return cls()

    def save(self, path: Path, *, indent: int | None = None) -> None:
        """Write to a temporary file next to ``path``, then rename it over ``path``."""
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                handle.write(self.model_dump_json(indent=indent))
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise

    @property
    def chunk_count(self) -> int:
        return sum(len(f.chunks) for f in self.files.values())

    @property
    def vector_count(self) -> int:
        return sum(c.vector is not None for f in self.files.values() for c in f.chunks)
