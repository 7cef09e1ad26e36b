"""Open SQLite connections with FTS5 and, when it loads, the sqlite-vec extension.

The stdlib ``sqlite3`` of many Python builds cannot load extensions, so ``sqlean`` (a drop-in
DB-API module bundling a recent SQLite) is preferred. Without either, vectors are searched
in-process with numpy and status says why.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import sqlite3
from pathlib import Path
from types import ModuleType
from typing import Any, Literal

import msgspec

BUSY_TIMEOUT_MS = 5000


class DriverInfo(msgspec.Struct, frozen=True):
    """Which SQLite module is in use and whether sqlite-vec loaded."""

    module: str
    sqlite_version: str
    vec_loaded: bool
    vec_version: str | None
    vec_path: str | None
    vec_error: str | None


def sqlite_module() -> ModuleType:
    """``sqlean`` when installed, else the stdlib ``sqlite3``."""
    try:
        return importlib.import_module("sqlean")
    except ImportError:
        return sqlite3


def _bundled_vec_path() -> str:
    """``sqlite_vec.loadable_path()`` without importing ``sqlite_vec``, whose ``__init__``
    imports NumPy when it is installed (most of a keyword-only command's start-up)."""
    spec = importlib.util.find_spec("sqlite_vec")
    if spec is None or spec.origin is None:
        raise ModuleNotFoundError("No module named 'sqlite_vec'", name="sqlite_vec")
    return os.path.normpath(os.path.join(os.path.dirname(spec.origin), "vec0"))


def _load_vec(conn: Any, extension_path: str | None) -> tuple[str | None, str | None, str | None]:
    try:
        path = extension_path or _bundled_vec_path()
        conn.enable_load_extension(True)
        try:
            conn.load_extension(path)
        finally:
            conn.enable_load_extension(False)
        version = conn.execute("SELECT vec_version()").fetchone()[0]
        return str(version), path, None
    except Exception as exc:
        return None, None, f"{type(exc).__name__}: {exc}"


def _read_only_uri(path: Path | str, immutable: bool) -> str:
    uri = Path(path).resolve().as_uri() + "?mode=ro"
    return uri + "&immutable=1" if immutable else uri


def connect(
    path: Path | str,
    *,
    load_vec: bool = True,
    extension_path: str | None = None,
    read_only: Literal["", "ro", "immutable"] = "",
) -> tuple[Any, DriverInfo]:
    """Open ``path`` (WAL, busy timeout, NORMAL sync) and try to load sqlite-vec.

    ``read_only="ro"`` opens with ``mode=ro`` (no writes, WAL still read); ``"immutable"``
    also tells SQLite the file cannot change, which a WAL database on read-only media needs
    (there its shared-memory file cannot be created).
    """
    conn = open_connection(path, read_only=read_only)
    return conn, attach_vec(conn, load_vec=load_vec, extension_path=extension_path)


def open_connection(path: Path | str, *, read_only: Literal["", "ro", "immutable"] = "") -> Any:
    """:func:`connect` without sqlite-vec: for a caller that loads it later, or never."""
    mod = sqlite_module()
    target = _read_only_uri(path, read_only == "immutable") if read_only else str(path)
    conn = mod.connect(
        target, timeout=BUSY_TIMEOUT_MS / 1000, check_same_thread=False, uri=bool(read_only)
    )
    conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
    if not read_only:
        conn.execute("PRAGMA journal_mode = WAL")
        conn.execute("PRAGMA synchronous = NORMAL")
    return conn


def attach_vec(conn: Any, *, load_vec: bool, extension_path: str | None) -> DriverInfo:
    """Load sqlite-vec into ``conn`` (when ``load_vec``) and say how that went."""
    mod = sqlite_module()
    version = path_error = None
    vec_path = None
    if load_vec:
        version, vec_path, path_error = _load_vec(conn, extension_path)
    else:
        path_error = "disabled by store.vector.enabled = false"
    return DriverInfo(
        module=mod.__name__,
        sqlite_version=str(mod.sqlite_version),
        vec_loaded=version is not None,
        vec_version=version,
        vec_path=vec_path,
        vec_error=path_error,
    )


def capabilities() -> dict[str, Any]:
    """SQLite facts for ``memwell doctor``: version, FTS5, trigram, sqlite-vec."""
    conn, info = connect(":memory:")
    facts: dict[str, Any] = {
        "module": info.module,
        "sqlite_version": info.sqlite_version,
        "sqlite_vec": info.vec_version or f"unavailable ({info.vec_error})",
    }
    for name, ddl in (
        ("fts5", "CREATE VIRTUAL TABLE t1 USING fts5(x)"),
        ("trigram", "CREATE VIRTUAL TABLE t2 USING fts5(x, tokenize='trigram')"),
    ):
        try:
            conn.execute(ddl)
            facts[name] = True
        except Exception as exc:
            facts[name] = f"unavailable ({exc})"
    conn.close()
    return facts
