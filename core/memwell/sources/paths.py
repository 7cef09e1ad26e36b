"""Safe ``read_file``: which paths may be read and how line slices are taken.

Session transcripts (``sessions/<file>.jsonl``, the paths search returns for them) are read
when the caller passes the sessions directory: the requested JSONL lines come back as the
redacted ``User: …`` / ``Assistant: …`` text that was indexed, never as raw JSON.

A Markdown path is readable if it is a memory path inside the workspace or lies in a configured
extra path, is a Markdown file (``.md``/``.markdown``, any case), and its real path (every
symlink resolved) stays inside the real workspace memory area or the real extra directory. The
last component must not be a symlink.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator, Sequence
from itertools import islice
from pathlib import Path
from typing import BinaryIO

from memwell.contract.errors import PathNotAllowedError
from memwell.contract.models import ReadFileResult
from memwell.sources.discovery import (
    MEMORY_DIR,
    SESSIONS_SOURCE,
    decode_text,
    is_markdown_name,
    normalize_extra_paths,
    open_regular_file,
    relative_path,
    text_encoding,
)
from memwell.sources.sessions import (
    ParsedSession,
    layout_name,
    numbered_session_lines,
    parse_session_jsonl,
    render_session_lines,
)
from memwell.util.lazy_import import lazy_pattern

MAX_PATH_CHARS = 4096
ROOT_READABLE_FILES = frozenset({"MEMORY.md", "memory.md", "DREAMS.md"})

_LEADING_DOT_SLASH = lazy_pattern(r"^(?:\./)+")


def is_memory_path(rel: str) -> bool:
    """True for ``MEMORY.md``, ``memory.md``, ``DREAMS.md`` and paths under ``memory/``."""
    stripped = _LEADING_DOT_SLASH.sub("", rel)
    return stripped in ROOT_READABLE_FILES or stripped.startswith(f"{MEMORY_DIR}/")


def _reject(reason: str) -> PathNotAllowedError:
    return PathNotAllowedError(f"path not allowed: {reason}")


def _validated_input(rel_path: str) -> str:
    raw = rel_path.strip()
    if not raw:
        raise PathNotAllowedError("path required")
    if "\x00" in raw:
        raise _reject("contains a NUL byte")
    if len(raw) > MAX_PATH_CHARS:
        raise _reject(f"longer than {MAX_PATH_CHARS} characters")
    try:
        os.fsencode(raw)
    except UnicodeEncodeError as exc:
        raise _reject("not encodable for this filesystem") from exc
    return raw


def _is_within(child: str, parent: str) -> bool:
    return os.path.commonpath([child, parent]) == parent


def _in_workspace_memory(abs_path: str, real: str, workspace: Path) -> bool:
    rel = relative_path(Path(abs_path), workspace)
    if rel == "." or rel.split("/", 1)[0] == ".." or not is_memory_path(rel):
        return False
    real_ws = os.path.realpath(workspace)
    return _is_within(real, real_ws) and is_memory_path(relative_path(Path(real), Path(real_ws)))


def _in_extra_path(abs_path: str, real: str, extra: Path) -> bool:
    try:
        mode = os.lstat(extra).st_mode
    except OSError:
        return False
    if stat.S_ISDIR(mode):
        return _is_within(abs_path, str(extra)) and _is_within(real, os.path.realpath(extra))
    return stat.S_ISREG(mode) and abs_path == str(extra)


def resolve_read_path(
    workspace: Path, rel_path: str, extra_paths: Sequence[str] = ()
) -> tuple[Path, str]:
    """Check ``rel_path`` against the read rules; return ``(real absolute path, display path)``.

    Raises :class:`PathNotAllowedError` if the path is empty, malformed, not Markdown, outside
    the allowed set, escapes it through a symlink, or is itself a symlink.
    """
    raw = _validated_input(rel_path)
    ws = Path(os.path.abspath(workspace))
    abs_path = os.path.normpath(os.path.join(ws, raw))
    display = relative_path(Path(abs_path), ws)
    if not is_markdown_name(abs_path):
        raise _reject(f"not a Markdown file: {display}")
    real = os.path.realpath(abs_path)
    allowed = _in_workspace_memory(abs_path, real, ws) or any(
        _in_extra_path(abs_path, real, extra) for extra in normalize_extra_paths(ws, extra_paths)
    )
    if not allowed:
        raise _reject(f"outside the memory files: {display}")
    if os.path.islink(abs_path):
        raise _reject(f"symlink: {display}")
    return Path(real), display


def read_memory_file(
    workspace: Path,
    rel_path: str,
    *,
    from_line: int | None = None,
    lines: int | None = None,
    extra_paths: Sequence[str] = (),
    sessions_dir: Path | None = None,
) -> ReadFileResult:
    """Read an allowed memory file, whole or a 1-based line slice (0 or None means unset).

    A missing file gives empty text (and ``missing``); so does a slice past the end of the
    file. Undecodable bytes are replaced. Slices stream the file line by line. With
    ``sessions_dir``, ``sessions/<transcript>`` paths read that transcript's messages.
    """
    if sessions_dir is not None:
        name = _session_name(rel_path)
        if name is not None:
            return _read_session(sessions_dir, name, from_line or None, lines or None)
    real, display = resolve_read_path(workspace, rel_path, extra_paths)
    try:
        with open_regular_file(real) as handle:
            text = _read_text(handle, from_line or None, lines or None)
    except FileNotFoundError:
        return ReadFileResult(path=display, text="", missing=True)
    return ReadFileResult(path=display, text=text)


def _session_name(rel_path: str) -> str | None:
    """The transcript's path under the sessions directory of a ``sessions/<name>`` or
    ``sessions/<sessionKey>/transcripts/<name>`` path, else ``None``."""
    raw = _validated_input(rel_path)
    prefix, _, name = _LEADING_DOT_SLASH.sub("", raw).partition("/")
    return layout_name(name) if prefix == SESSIONS_SOURCE else None


def _parsed_session(sessions_dir: Path, name: str) -> ParsedSession | None:
    """The transcript ``name`` under ``sessions_dir``, parsed; ``None`` when it is missing."""
    folder = (sessions_dir / name).parent
    if folder != sessions_dir and os.path.realpath(folder) != str(folder):
        # a session folder must not lead elsewhere
        raise _reject(f"symlink: {SESSIONS_SOURCE}/{name}")
    try:
        with open_regular_file(sessions_dir / name) as handle:
            return parse_session_jsonl(decode_text(handle.read()))
    except FileNotFoundError:
        return None


def _read_session(
    sessions_dir: Path, name: str, from_line: int | None, lines: int | None
) -> ReadFileResult:
    display = f"{SESSIONS_SOURCE}/{name}"
    parsed = _parsed_session(sessions_dir, name)
    if parsed is None:
        return ReadFileResult(path=display, text="", missing=True)
    return ReadFileResult(path=display, text=render_session_lines(parsed, from_line, lines))


def read_session_lines(
    sessions_dir: Path, rel_path: str, from_line: int, lines: int
) -> list[tuple[int, str]]:
    """``(JSONL line, message text)`` of a ``sessions/...`` transcript's lines ``from_line``
    .. ``from_line + lines - 1``, under the same rules as :func:`read_memory_file`; empty when
    the path is not a transcript or the file is missing."""
    name = _session_name(rel_path)
    parsed = _parsed_session(sessions_dir, name) if name is not None else None
    return numbered_session_lines(parsed, from_line, lines) if parsed is not None else []


def line_range(
    result: ReadFileResult, from_line: int | None, lines: int | None
) -> dict[str, int | None]:
    """The 1-based, inclusive ``start_line``/``end_line`` of a read (``None`` for an empty one).

    A transcript shows one line per message, so its range is the JSONL lines asked for.
    """
    start = from_line or 1
    if result.path.startswith(f"{SESSIONS_SOURCE}/"):
        return {"start_line": start, "end_line": start + lines - 1 if lines else None}
    if not result.text:
        return {"start_line": None, "end_line": None}
    text = result.text
    count = text.count("\n") + (0 if text.endswith("\n") else 1)
    return {"start_line": start, "end_line": start + count - 1}


def _window(from_line: int | None, lines: int | None) -> tuple[int, int | None]:
    """0-based ``(start, stop)`` of a 1-based ``from_line`` and a line count."""
    start = max(1, from_line or 1) - 1
    return start, None if lines is None else start + max(1, lines)


def slice_lines(text: str, from_line: int | None, lines: int | None) -> str:
    """Lines ``from_line`` (1-based) on, at most ``lines`` of them, of ``text``."""
    start, stop = _window(from_line, lines)
    return "\n".join(text.split("\n")[start:stop])


def _read_text(handle: BinaryIO, from_line: int | None, lines: int | None) -> str:
    """The file's text or a line slice; UTF-8 slices stream, UTF-16 files decode whole."""
    head = handle.read(3)
    codec, skip = text_encoding(head)
    whole = from_line is None and lines is None
    if whole or codec != "utf-8":
        text = (head + handle.read())[skip:].decode(codec, errors="replace")
        return text if whole else slice_lines(text, from_line, lines)
    handle.seek(skip)
    start, stop = _window(from_line, lines)
    return "\n".join(islice(_split_lines(handle), start, stop))


def _split_lines(handle: BinaryIO) -> Iterator[str]:
    """Yield the lines of ``handle`` exactly as ``text.split("\\n")`` would, without loading it."""
    ended_with_newline = True
    for raw in handle:
        ended_with_newline = raw.endswith(b"\n")
        yield (raw[:-1] if ended_with_newline else raw).decode("utf-8", errors="replace")
    if ended_with_newline:
        yield ""
