"""The bearer token of ``memwell mcp --http``: made at the first start, kept in the user's
config directory (``$XDG_CONFIG_HOME/memwell/mcp-token``, beside ``config.toml``) with mode
0600, and sent by clients as ``Authorization: Bearer <token>``.

Example::

    from memwell.mcp.token import http_token

    token = http_token()  # the stored token; a new one the first time
    headers = {"Authorization": f"Bearer {token.value}"}
"""

from __future__ import annotations

import os
import re
import secrets
import stat
import tempfile
from dataclasses import dataclass
from pathlib import Path

from memwell.contract.config import user_config_path
from memwell.contract.errors import ConfigError
from memwell.util.lazy_import import lazy_logger

log = lazy_logger(__name__)

TOKEN_FILE_NAME = "mcp-token"
_TOKEN_SHAPE = re.compile(r"[A-Za-z0-9_-]{32,512}")


@dataclass(frozen=True)
class HttpToken:
    """A bearer token, the file that keeps it, and whether this call made it."""

    value: str
    path: Path
    created: bool


def token_path() -> Path:
    """Where the token is kept: ``mcp-token`` beside the user's ``config.toml``."""
    return user_config_path().parent / TOKEN_FILE_NAME


def http_token(path: Path | None = None) -> HttpToken:
    """The token stored at ``path`` (default :func:`token_path`), made there when missing.

    A new token is 32 random bytes, URL-safe base64; its file is mode 0600 in a directory made
    0700, and appears whole or not at all (two servers starting at once share one token). A
    file readable by others is set back to 0600, with a warning.

    :raises ConfigError: the file cannot be read or does not hold a token.
    """
    path = path if path is not None else token_path()
    try:
        return HttpToken(_read_token(path), path, created=False)
    except FileNotFoundError:
        pass
    try:
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        value = secrets.token_urlsafe(32)
        fd, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")  # mode 0600
        try:
            with os.fdopen(fd, "w", encoding="ascii") as handle:
                handle.write(value + "\n")
            os.link(temporary, path)  # fails if another server made the token meanwhile
        finally:
            os.unlink(temporary)
    except FileExistsError:
        return HttpToken(_read_token(path), path, created=False)
    except OSError as exc:
        raise ConfigError(f"cannot create the MCP token file {path}: {exc}") from exc
    return HttpToken(value, path, created=True)


def _read_token(path: Path) -> str:
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    except FileNotFoundError:
        raise
    except OSError as exc:
        raise ConfigError(f"cannot read the MCP token file {path}: {exc}") from exc
    with os.fdopen(fd, "r", encoding="ascii", errors="replace") as handle:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise ConfigError(f"the MCP token file {path} is not a regular file")
        if mode & 0o077:
            os.fchmod(fd, 0o600)
            log.warning("memwell mcp: %s was readable by others; set to mode 0600", path)
        value = handle.read(1024).strip()
    if not _TOKEN_SHAPE.fullmatch(value):
        raise ConfigError(
            f"the MCP token file {path} holds no token; delete it and the next start makes one"
        )
    return value
