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
from pathlib import Path, PurePath
from typing import BinaryIO

import msgspec

from memwell.contract.errors import PathNotAllowedError
from memwell.contract.layout import ROOT_MEMORY_FILES as ROOT_MEMORY_FILES

SKIPPED_DIR_NAMES = frozenset({".git", "node_modules", ".venv", "venv", "__pycache__", ".memwell"})
"""Directory names never entered while walking ``memory/`` or an extra directory."""

MEMORY_DIR = "memory"
SESSIONS_SOURCE = "sessions"

MARKDOWN_SUFFIXES = (".md", ".markdown")
"""File name endings (compared case-insensitively) that count as Markdown."""

_BOMS = ((b"\xef\xbb\xbf", "utf-8"), (b"\xff\xfe", "utf-16-le"), (b"\xfe\xff", "utf-16-be"))
_UNNORMAL_PARTS = frozenset({"", ".", ".."})
_MISSING_ERRNOS = frozenset({errno.ENOENT, errno.ENOTDIR, errno.ENAMETOOLONG})
_SYMLINK_ERRNOS = frozenset({errno.ELOOP, errno.EMLINK})
_OPEN_FLAGS = (
    os.O_RDONLY
    | getattr(os, "O_NOFOLLOW", 0)
    | getattr(os, "O_NONBLOCK", 0)
    | getattr(os, "O_BINARY", 0)
)


class SourceFile(msgspec.Struct, frozen=True):
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


def relative_path(abs_path: str | Path, workspace: str | Path) -> str:
    """``abs_path`` relative to ``workspace`` with ``/`` separators (may start with ``../``).

    A path inside a normalised absolute workspace (every discovered file) is cut by string
    prefix: a sync's stat walk calls this once per file, and ``os.path.relpath`` was half of
    a no-op sync.
    """
    path, root = os.fspath(abs_path), os.fspath(workspace)
    base = root.rstrip(os.sep)
    if path.startswith(base + os.sep) and os.path.isabs(root) and os.path.normpath(root) == root:
        parts = path[len(base) + 1 :].split(os.sep)
        if not _UNNORMAL_PARTS.intersection(parts):
            return "/".join(parts)
    return PurePath(os.path.relpath(path, root)).as_posix()


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


class FoundFile(msgspec.Struct, frozen=True):
    """A discovered memory file with the stat data of the walk that found it."""

    path: str
    """Workspace-relative, ``/``-separated (as stored in an index)."""
    abs_path: str
    mtime_ns: int
    size: int


def list_memory_files(
    workspace: Path, extra_paths: Sequence[str] = (), problems: list[str] | None = None
) -> list[Path]:
    """List the Markdown memory files of ``workspace``, sorted, one entry per real file.

    Root ``MEMORY.md``/``memory.md``, ``memory/**/*.md`` and the extra paths (directories are
    walked, single Markdown files added, missing or symlinked entries ignored). When two
    entries are the same file, the first found is kept. Directories that cannot be listed
    are appended to ``problems`` as ``"path: reason"``.
    """
    return [Path(found.abs_path) for found in scan_memory_files(workspace, extra_paths, problems)]


def scan_memory_files(
    workspace: Path, extra_paths: Sequence[str] = (), problems: list[str] | None = None
) -> list[FoundFile]:
    """:func:`list_memory_files` with each file's relative path, mtime and size.

    One ``lstat`` per file serves the walk, the same-file check and the stat a sync compares
    with its index, and no :class:`~pathlib.Path` is built per file: a no-op sync is this
    walk, and path objects and repeated stats were most of it.
    """
    ws = os.path.abspath(workspace)
    found: list[tuple[str, os.stat_result]] = []
    for name in ROOT_MEMORY_FILES:
        path = os.path.join(ws, name)
        info = _lstat(path)
        if info is not None and stat.S_ISREG(info.st_mode):
            found.append((path, info))
    memory_dir = os.path.join(ws, MEMORY_DIR)
    if is_real_dir(memory_dir):
        found.extend(_walk_markdown(memory_dir, ws, problems))
    for extra in normalize_extra_paths(Path(ws), extra_paths):
        info = _lstat(extra)
        if info is not None and stat.S_ISDIR(info.st_mode):
            found.extend(_walk_markdown(str(extra), ws, problems))
        elif info is not None and stat.S_ISREG(info.st_mode) and is_markdown_name(extra.name):
            found.append((str(extra), info))
    unique = _dedupe_same_file(found)
    unique.sort(key=lambda item: item[0])
    # ``ws`` is absolute and normalised, and so is every path found under it (scandir joins
    # real names): its prefix is cut once here instead of checked per file.
    prefix = ws.rstrip(os.sep) + os.sep
    return [
        FoundFile(
            path[len(prefix) :].replace(os.sep, "/")
            if path.startswith(prefix)
            else relative_path(path, ws),
            path,
            info.st_mtime_ns,
            info.st_size,
        )
        for path, info in unique
    ]


def _lstat(path: str | Path) -> os.stat_result | None:
    try:
        return os.lstat(path)
    except OSError:
        return None


def is_real_dir(path: str | Path) -> bool:
    """A directory that is not a symlink."""
    info = _lstat(path)
    return info is not None and stat.S_ISDIR(info.st_mode)


def _problem(path: str | Path, workspace: str | Path, exc: OSError) -> str:
    return f"{relative_path(path, workspace)}: {exc.strerror or type(exc).__name__}"


def _walk_markdown(
    root: str, workspace: str, problems: list[str] | None
) -> Iterator[tuple[str, os.stat_result]]:
    """Depth-first, name-ordered walk yielding regular Markdown files (path and ``lstat``);
    symlinks are skipped."""
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
        subdirs: list[str] = []
        for entry in entries:
            if entry.is_symlink():
                continue
            if entry.is_dir(follow_symlinks=False):
                if entry.name not in SKIPPED_DIR_NAMES:
                    subdirs.append(entry.path)
            elif is_markdown_name(entry.name) and entry.is_file(follow_symlinks=False):
                try:
                    yield entry.path, entry.stat(follow_symlinks=False)
                except OSError:
                    continue  # gone since the listing
        stack.extend(reversed(subdirs))


def _dedupe_same_file(
    found: Sequence[tuple[str, os.stat_result]],
) -> list[tuple[str, os.stat_result]]:
    """Keep the first entry of each real file (device and inode: case-insensitive aliases
    match too; every entry is a regular file, never a symlink, so its lstat is its stat)."""
    seen: set[tuple[int, int]] = set()
    unique: list[tuple[str, os.stat_result]] = []
    for path, info in found:
        identity = (info.st_dev, info.st_ino)
        if identity not in seen:
            seen.add(identity)
            unique.append((path, info))
    return unique


def _display_path(
    abs_path: Path, workspace: Path, source: str, sessions_dir: Path | None = None
) -> str:
    """Stored path: ``sessions/`` and the transcript's path under ``sessions_dir`` (its
    basename without one) for session transcripts, else workspace-relative."""
    if source == SESSIONS_SOURCE:
        name = abs_path.name
        if sessions_dir is not None and sessions_dir in abs_path.parents:
            name = abs_path.relative_to(sessions_dir).as_posix()
        return f"{SESSIONS_SOURCE}/{name}"
    return relative_path(abs_path, workspace)


def stat_source_file(
    abs_path: Path, workspace: Path, source: str = "memory", sessions_dir: Path | None = None
) -> tuple[str, int, int] | None:
    """Return ``(path, mtime_ns, size)`` without reading; None if gone or not a regular file.

    A session transcript's path is taken relative to ``sessions_dir`` when given
    (``sessions/<sessionKey>/transcripts/<file>``), else it is ``sessions/<basename>``.
    """
    try:
        info = os.lstat(abs_path)
    except OSError:
        return None
    if not stat.S_ISREG(info.st_mode):
        return None
    return _display_path(abs_path, workspace, source, sessions_dir), info.st_mtime_ns, info.st_size


def read_source_file(
    abs_path: Path,
    workspace: Path,
    source: str = "memory",
    problems: list[str] | None = None,
    sessions_dir: Path | None = None,
) -> tuple[SourceFile, str] | None:
    """Read a discovered file: its entry (sha256 of the bytes) and its text (:func:`decode_text`).

    Its path is :func:`stat_source_file`'s.

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
        path=_display_path(abs_path, workspace, source, sessions_dir),
        abs_path=abs_path,
        mtime_ns=info.st_mtime_ns,
        size=info.st_size,
        hash=hashlib.sha256(data).hexdigest(),
        source=source,
    )
    return entry, decode_text(data)
