"""What identifies a model directory's vector space: its content, not where it is installed.

The index identity of the local provider used to include the model directory's path, so the
same model installed in a new virtual environment (or upgraded in place to a new path) looked
like another model and every chunk was embedded again. :func:`model_digest` hashes what the
loader reads instead: every file's relative name and size, small files whole, and for large
files (weights) their first, middle and last blocks, where a safetensors header and any
retrained tensor show. It reads about a megabyte, in about a millisecond.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

#: Files up to this size are hashed whole; larger ones by three blocks of ``SAMPLE_BYTES``.
WHOLE_FILE_BYTES = 1 << 20
SAMPLE_BYTES = 64 * 1024
#: Documentation next to the weights: it does not change a vector.
IGNORED_NAMES = frozenset({"README.md", ".gitattributes"})


def model_digest(directory: Path) -> str:
    """A SHA-256 of the model files under ``directory`` (see the module docstring)."""
    digest = hashlib.sha256()
    for path in sorted(_model_files(directory)):
        size = path.stat().st_size
        digest.update(f"{path.relative_to(directory).as_posix()}\0{size}\0".encode())
        with path.open("rb") as fh:
            if size <= WHOLE_FILE_BYTES:
                digest.update(fh.read())
                continue
            for offset in (0, (size - SAMPLE_BYTES) // 2, size - SAMPLE_BYTES):
                fh.seek(offset)
                digest.update(fh.read(SAMPLE_BYTES))
    return digest.hexdigest()


def _model_files(directory: Path) -> list[Path]:
    files: list[Path] = []
    for root, dirs, names in os.walk(directory):
        dirs[:] = [d for d in dirs if not d.startswith(".")]
        files.extend(
            Path(root, name)
            for name in names
            if not name.startswith(".") and name not in IGNORED_NAMES
        )
    return files
