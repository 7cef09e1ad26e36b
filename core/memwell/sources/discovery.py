"""Markdown memory file discovery and hashed, no-follow reads of the files found.

Discovery lists ``MEMORY.md``, ``memory.md`` and every Markdown file (``.md``, ``.markdown``,
any case) under ``memory/`` plus the configured extra paths. Symlinked files and directories
are never followed. A directory or file that cannot be read is reported (``problems``), never
skipped in silence. Text is UTF-8, or UTF-16 when the file starts with its byte-order mark.
Deliberate improvement over the reference: walks also skip tool and cache directories
(:data:`SKIPPED_DIR_NAMES`), so a stray ``node_modules`` inside ``memory/`` is not indexed.
"""

from __future__ import annotations

import errno
import hashlib
import os
import stat
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePath
from typing import BinaryIO

from memwell.errors import PathNotAllowedError

SKIPPED_DIR_NAMES = frozenset({".git", "node_modules", ".venv", "venv", "__pycache__", ".memwell"})
"""Directory names never entered while walking ``memory/`` or an extra directory."""

ROOT_MEMORY_FILES = ("MEMORY.md", "memory.md")
MEMORY_DIR = "memory"
SESSIONS_SOURCE = "sessions"

MARKDOWN_SUFFIXES = (".md", ".markdown")
"""File name endings (compared case-insensitively) that count as Markdown."""

_BOMS = ((b"\xef\xbb\xbf", "utf-8"), (b"\xff\xfe", "utf-16-le"), (b"\xfe\xff", "utf-16-be"))
_MISSING_ERRNOS = frozenset({errno.ENOENT, errno.ENOTDIR, errno.ENAMETOOLONG})
_SYMLINK_ERRNOS = frozenset({errno.ELOOP, errno.EMLINK})
_OPEN_FLAGS = (
    os.O_RDONLY
    | getattr(os, "O_NOFOLLOW", 0)
    | getattr(os, "O_NONBLOCK", 0)
    | getattr(os, "O_BINARY", 0)
)


@dataclass(frozen=True)
class SourceFile:
    """One indexable file: where it is, its stat data and the sha256 of its bytes."""

    path: str
    abs_path: Path
    mtime_ns: int
    size: int
    hash: str
    source: str = "memory"


def is_markdown_name(name: str) -> bool:
    """True for ``.md`` and ``.markdown`` file names, in any case (``NOTES.MD``)."""
    return name.lower().endswith(MARKDOWN_SUFFIXES)


def text_encoding(head: bytes) -> tuple[str, int]:
    """``(codec, BOM length)`` for a file starting with ``head``: UTF-16 or UTF-8 by its BOM."""
    for bom, codec in _BOMS:
        if head.startswith(bom):
            return codec, len(bom)
    return "utf-8", 0


def decode_text(data: bytes) -> str:
    """A memory file's text: BOM-detected UTF-16 or UTF-8 (bad bytes replaced), BOM dropped."""
    codec, skip = text_encoding(data[:3])
    return data[skip:].decode(codec, errors="replace")


def relative_path(abs_path: Path, workspace: Path) -> str:
    """``abs_path`` relative to ``workspace`` with ``/`` separators (may start with ``../``)."""
    path, base = os.fspath(abs_path), os.fspath(workspace)
    # The common case (a sync stats every file): a normalised path inside a normalised
    # workspace is a plain suffix; os.path.relpath costs more than the file's stat.
    prefix = base if base.endswith(os.sep) else base + os.sep
    normal = os.path.normpath(base) == base and os.path.normpath(path) == path
    if normal and os.path.isabs(base) and path.startswith(prefix):
        return path[len(prefix) :].replace(os.sep, "/")
    return PurePath(os.path.relpath(abs_path, workspace)).as_posix()


def normalize_extra_paths(workspace: Path, extra_paths: Sequence[str]) -> list[Path]:
    """Trim extra path entries, resolve them against ``workspace`` and drop blanks and repeats."""
    resolved: list[Path] = []
    for entry in extra_paths:
        trimmed = entry.strip()
        if not trimmed:
            continue
        candidate = Path(os.path.normpath(os.path.join(os.path.abspath(workspace), trimmed)))
        if candidate not in resolved:
            resolved.append(candidate)
    return resolved


def open_regular_file(path: Path) -> BinaryIO:
    """Open ``path`` for binary reading without following a symlink in its last component.

    Raises ``FileNotFoundError`` if it does not exist (or cannot exist), and
    :class:`PathNotAllowedError` if it is a symlink or not a regular file. FIFOs are opened
    non-blocking and then rejected, so they never hang the caller.
    """
    try:
        mode = os.lstat(path).st_mode
        if not stat.S_ISREG(mode):
            raise PathNotAllowedError(f"path not allowed: not a regular file: {path}")
        fd = os.open(path, _OPEN_FLAGS)
    except OSError as exc:
        raise _translate_os_error(exc, path) from exc
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise PathNotAllowedError(f"path not allowed: not a regular file: {path}")
    return os.fdopen(fd, "rb")


def _translate_os_error(exc: OSError, path: Path) -> Exception:
    if exc.errno in _MISSING_ERRNOS:
        return FileNotFoundError(errno.ENOENT, "No such file", str(path))
    if exc.errno in _SYMLINK_ERRNOS:
        return PathNotAllowedError(f"path not allowed: symlink: {path}")
    return exc


def list_memory_files(
    workspace: Path, extra_paths: Sequence[str] = (), problems: list[str] | None = None
) -> list[Path]:
    """List the Markdown memory files of ``workspace``, sorted, one entry per real file.

    Root ``MEMORY.md``/``memory.md``, ``memory/**/*.md`` and the extra paths (directories are
    walked, single Markdown files added, missing or symlinked entries ignored). When two
    entries are the same file, the first found is kept. Directories that cannot be listed
    are appended to ``problems`` as ``"path: reason"``.
    """
    ws = Path(os.path.abspath(workspace))
    found = [ws / name for name in ROOT_MEMORY_FILES if _is_markdown_file(ws / name)]
    if _is_real_dir(ws / MEMORY_DIR):
        found.extend(_walk_markdown(ws / MEMORY_DIR, ws, problems))
    for extra in normalize_extra_paths(ws, extra_paths):
        if _is_real_dir(extra):
            found.extend(_walk_markdown(extra, ws, problems))
        elif _is_markdown_file(extra):
            found.append(extra)
    return sorted(_dedupe_same_file(found), key=str)


def _lstat_mode(path: Path) -> int:
    try:
        return os.lstat(path).st_mode
    except OSError:
        return 0


def _is_real_dir(path: Path) -> bool:
    return stat.S_ISDIR(_lstat_mode(path))


def _is_markdown_file(path: Path) -> bool:
    return is_markdown_name(path.name) and stat.S_ISREG(_lstat_mode(path))


def _problem(path: Path, workspace: Path, exc: OSError) -> str:
    return f"{relative_path(path, workspace)}: {exc.strerror or type(exc).__name__}"


def _walk_markdown(root: Path, workspace: Path, problems: list[str] | None) -> Iterator[Path]:
    """Depth-first, name-ordered walk yielding regular Markdown files; symlinks are skipped."""
    stack = [root]
    while stack:
        directory = stack.pop()
        try:
            with os.scandir(directory) as listing:
                entries = sorted(listing, key=lambda entry: entry.name)
        except OSError as exc:
            if problems is not None and exc.errno not in _MISSING_ERRNOS:
                problems.append(_problem(directory, workspace, exc))
            continue
        subdirs: list[Path] = []
        for entry in entries:
            if entry.is_symlink():
                continue
            if entry.is_dir(follow_symlinks=False):
                if entry.name not in SKIPPED_DIR_NAMES:
                    subdirs.append(Path(entry.path))
            elif is_markdown_name(entry.name) and entry.is_file(follow_symlinks=False):
                yield Path(entry.path)
        stack.extend(reversed(subdirs))


def _file_identity(path: Path) -> tuple[int, int] | str:
    """Device and inode (so case-insensitive aliases match too), else the realpath."""
    try:
        info = os.stat(path)
    except OSError:
        return os.path.realpath(path)
    return (info.st_dev, info.st_ino)


def _dedupe_same_file(paths: Sequence[Path]) -> list[Path]:
    seen: set[tuple[int, int] | str] = set()
    unique: list[Path] = []
    for path in paths:
        identity = _file_identity(path)
        if identity not in seen:
            seen.add(identity)
            unique.append(path)
    return unique


def _display_path(abs_path: Path, workspace: Path, source: str) -> str:
    """Stored path: ``sessions/<basename>`` for session transcripts, else workspace-relative."""
    if source == SESSIONS_SOURCE:
        return f"{SESSIONS_SOURCE}/{abs_path.name}"
    return relative_path(abs_path, workspace)


def stat_source_file(
    abs_path: Path, workspace: Path, source: str = "memory"
) -> tuple[str, int, int] | None:
    """Return ``(path, mtime_ns, size)`` without reading; None if gone or not a regular file."""
    try:
        info = os.lstat(abs_path)
    except OSError:
        return None
    if not stat.S_ISREG(info.st_mode):
        return None
    return _display_path(abs_path, workspace, source), info.st_mtime_ns, info.st_size


def read_source_file(
    abs_path: Path, workspace: Path, source: str = "memory", problems: list[str] | None = None
) -> tuple[SourceFile, str] | None:
    """Read a discovered file: its entry (sha256 of the bytes) and its text (:func:`decode_text`).

    Returns None if the file vanished, became a symlink or non-regular file, or is unreadable;
    an unreadable file (permissions, I/O error) is appended to ``problems``.
    """
    try:
        with open_regular_file(abs_path) as handle:
            info = os.fstat(handle.fileno())
            data = handle.read()
    except PathNotAllowedError:
        return None
    except OSError as exc:
        if problems is not None and not isinstance(exc, FileNotFoundError):
            problems.append(_problem(abs_path, workspace, exc))
        return None
    entry = SourceFile(
        path=_display_path(abs_path, workspace, source),
        abs_path=abs_path,
        mtime_ns=info.st_mtime_ns,
        size=info.st_size,
        hash=hashlib.sha256(data).hexdigest(),
        source=source,
    )
    return entry, decode_text(data)
