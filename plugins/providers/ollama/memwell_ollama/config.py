"""The ``[providers.ollama]`` section and where the server is."""

import os
from typing import Annotated
from urllib.parse import urlsplit

import msgspec
from memwell.plugin import Record

DEFAULT_HOST = "http://127.0.0.1:11434"
DEFAULT_PORT = 11434
HOST_ENV = "OLLAMA_HOST"


class OllamaConfig(Record, forbid_unknown_fields=True):
    """``base_url`` (else ``OLLAMA_HOST``, else the local default), an optional Bearer
    ``api_key`` (for a server behind a proxy), extra ``headers``, and the reachability probe's
    time limit."""

    base_url: str | None = None
    api_key: str | None = None
    headers: dict[str, str] = msgspec.field(default_factory=dict)
    probe_timeout_seconds: Annotated[float, msgspec.Meta(gt=0, le=30)] = 1.0


def normalize_host(raw: str) -> str:
    """``scheme://host:port[/path]`` from an ``OLLAMA_HOST``-style value.

    Like the Ollama CLI: the scheme defaults to ``http``, the port to 11434 (443 for https),
    and the listen-everywhere address ``0.0.0.0`` means this machine.
    """
    text = raw.strip().rstrip("/")
    if "://" not in text:
        text = f"http://{text}"
    parts = urlsplit(text)
    scheme = parts.scheme or "http"
    host = parts.hostname or "127.0.0.1"
    if host in ("0.0.0.0", "::"):
        host = "127.0.0.1"
    if ":" in host:
        host = f"[{host}]"
    port = parts.port or (443 if scheme == "https" else DEFAULT_PORT)
    return f"{scheme}://{host}:{port}{parts.path.rstrip('/')}"


def resolve_host(config: OllamaConfig) -> str:
    """The server's base URL: ``providers.ollama.base_url``, then ``OLLAMA_HOST``, then default."""
    for value in (config.base_url, os.environ.get(HOST_ENV)):
        if value and value.strip():
            return normalize_host(value)
    return DEFAULT_HOST
