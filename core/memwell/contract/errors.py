"""Exception hierarchy. Every error memwell raises on purpose derives from :class:`MemwellError`."""

from __future__ import annotations


class MemwellError(Exception):
    """Base class for memwell errors; its message is meant for the user."""


class ConfigError(MemwellError):
    """A configuration value is unknown, ill-typed or inconsistent.

    The message names the offending key and the file (or environment variable) it came from.
    """

    def __init__(self, message: str, *, key: str | None = None, source: str | None = None):
        super().__init__(message)
        self.key = key
        self.source = source


class InvalidArgumentError(MemwellError, ValueError):
    """An argument is out of range or of the wrong kind (a tool's, a command's, an API call's).

    Also a :class:`ValueError`, so callers that catch that keep working.
    """


class PluginError(MemwellError):
    """A plugin could not be loaded, collides with another plugin, or raised inside a call."""

    def __init__(self, message: str, *, plugin: str | None = None):
        super().__init__(message)
        self.plugin = plugin


class PluginApiMismatchError(PluginError):
    """A plugin declares a plugin API range that excludes this memwell's version."""


class ProviderError(MemwellError):
    """An embedding provider failed.

    ``retryable`` is true for rate limits, HTTP 429, 5xx and timeouts; the core retry loop
    retries only those.
    """

    def __init__(
        self,
        message: str,
        *,
        provider: str | None = None,
        retryable: bool = False,
        status_code: int | None = None,
    ):
        super().__init__(message)
        self.provider = provider
        self.retryable = retryable
        self.status_code = status_code


def provider_failure(exc: BaseException) -> ProviderError | None:
    """The :class:`ProviderError` ``exc`` is or was raised from (its ``__cause__`` or
    ``__context__`` chain), or ``None`` when no provider failed."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        if isinstance(current, ProviderError):
            return current
        seen.add(id(current))
        current = current.__cause__ or current.__context__
    return None


class ProviderUnavailableError(ProviderError):
    """A provider cannot be created here (no API key, model not installed).

    ``auto`` selection skips providers that raise this and tries the next one.
    """


class BackendUnavailableError(MemwellError):
    """A search backend cannot serve requests (missing binary, broken index, closed)."""


class PathNotAllowedError(MemwellError):
    """A ``read_file`` path is outside the allowed set (traversal, symlink, not Markdown)."""


class WriteRefusedError(MemwellError):
    """A memory write was refused; nothing was written.

    ``reason`` is a short code: ``disabled``, ``too_large``, ``blank``, ``invalid`` (not a
    string, NUL characters, unencodable), ``exists`` (create on an
    existing file), ``not_found`` / ``not_unique`` (the passage to replace), ``busy`` (the write
    lock or a concurrently changing file).
    """

    def __init__(self, message: str, *, reason: str):
        super().__init__(message)
        self.reason = reason


class MemoryFileNotFoundError(MemwellError):
    """A memory file asked for by path does not exist (``memwell get``)."""
