"""Errors raised by the qmd bridge, and the mapping from a failed qmd call to one of them.

Every class derives from :class:`memwell.errors.BackendUnavailableError`, so a failing qmd makes
:class:`memwell.fallback.FallbackMemoryManager` switch to the builtin backend with the message as reason.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from memwell.errors import BackendUnavailableError

_TAIL_CHARS = 600


def tail(text: str, limit: int = _TAIL_CHARS) -> str:
    """The last ``limit`` characters of ``text``, stripped (for error messages)."""
    text = text.strip()
    return text if len(text) <= limit else "…" + text[-limit:]


class QmdError(BackendUnavailableError):
    """A qmd call failed; ``args`` are qmd's arguments (without the command itself)."""

    def __init__(
        self,
        message: str,
        *,
        args: Sequence[str] = (),
        returncode: int | None = None,
        stderr: str = "",
    ) -> None:
        super().__init__(message)
        self.qmd_args = tuple(args)
        self.returncode = returncode
        self.stderr = stderr


class QmdNotInstalled(QmdError):
    """The configured qmd command cannot be found or started."""


class QmdTimeout(QmdError):
    """qmd did not finish in time; its whole process group was killed."""


class QmdRuntimeBroken(QmdError):
    """qmd crashed natively (SIGSEGV): usually a Node older than 22 for its native modules."""


class QmdConfigError(QmdError):
    """qmd's environment is wrong (for example ``CI`` leaked in, or a hijacking ``.qmd``)."""


class QmdModelUnavailable(QmdError):
    """A GGUF model that the command needs is missing or unusable."""


class QmdCollectionMissing(QmdError):
    """qmd does not know a collection the bridge asked for."""


class QmdCollectionConflict(QmdError):
    """``collection add`` clashed with an existing name or (path, pattern)."""


class QmdBusy(QmdError):
    """qmd's SQLite index is locked by another writer; retryable."""


class QmdIndexCorrupt(QmdError):
    """qmd's index violates its own constraints; repaired by re-adding the collections."""


class QmdUnsupportedFlag(QmdError):
    """This qmd build rejected a flag (older releases); the search is retried as ``query``."""


class QmdOutputError(QmdError):
    """qmd's output is empty, unparseable or larger than the configured cap."""


class QmdCommandError(QmdError):
    """qmd exited non-zero for another reason."""


_SIGSEGV = 11
_PATTERNS: tuple[tuple[re.Pattern[str], type[QmdError]], ...] = (
    (re.compile(r"LLM operations are disabled in CI"), QmdConfigError),
    (
        re.compile(r"No model file found at|not a GGUF|HTML page, not a GGUF|failed to load model"),
        QmdModelUnavailable,
    ),
    (re.compile(r"SQLITE_BUSY|database is locked"), QmdBusy),
    (
        re.compile(r"UNIQUE constraint failed: documents\.collection, documents\.path"),
        QmdIndexCorrupt,
    ),
    (re.compile(r"^Collection not found: ", re.M), QmdCollectionMissing),
    (
        re.compile(r"Collection '.*' already exists|A collection already exists for this path"),
        QmdCollectionConflict,
    ),
    (re.compile(r"unknown (?:flag|option)|unrecognized (?:flag|option)", re.I), QmdUnsupportedFlag),
)


def classify_failure(args: Sequence[str], returncode: int, stdout: str, stderr: str) -> QmdError:
    """Map a non-zero exit of ``qmd <args>`` to the most specific :class:`QmdError`."""
    command = "qmd " + " ".join(args[:2])
    detail = tail(stderr) or tail(stdout)
    if returncode in (139, -_SIGSEGV):
        return QmdRuntimeBroken(
            f"{command} crashed with SIGSEGV: wrong Node version for qmd's native modules "
            "(qmd 2.x needs Node >= 22)",
            args=args,
            returncode=returncode,
            stderr=stderr,
        )
    text = f"{stderr}\n{stdout}"
    for pattern, cls in _PATTERNS:
        if pattern.search(text):
            return cls(
                f"{command} failed (exit {returncode}): {detail}",
                args=args,
                returncode=returncode,
                stderr=stderr,
            )
    return QmdCommandError(
        f"{command} failed (exit {returncode}): {detail or 'no output'}",
        args=args,
        returncode=returncode,
        stderr=stderr,
    )
