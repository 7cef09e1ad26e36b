"""Errors raised by the qmd bridge, and the mapping from a failed qmd call to one of them.

Every class derives from :class:`memwell.contract.errors.BackendUnavailableError`, so a failing qmd
makes :class:`memwell.runtime.fallback.FallbackMemoryManager` switch to the builtin backend with the
message as reason.
"""

from __future__ import annotations

import re
import signal
from collections.abc import Sequence

from memwell.plugin import BackendUnavailableError

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
    """qmd's runtime failed: it was killed by a signal (a native crash such as SIGSEGV), or
    its Node is not one its native modules were built for."""


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


MIN_NODE_MAJOR = 22
"""qmd 2.x needs Node 22 or newer for its native modules."""
_NODE_MISMATCH = re.compile(
    r"NODE_MODULE_VERSION|was compiled against a different Node\.js version"
    r"|requires? Node(?:\.js)? (?:version )?>= ?\d+|Unsupported engine",
    re.I,
)
_NODE_VERSION = re.compile(r"v?(\d+)\.\d+\.\d+")
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


def signal_of(returncode: int) -> signal.Signals | None:
    """The signal that ended a process: ``-N`` from Python, ``128+N`` from a shell launcher."""
    number = -returncode if returncode < 0 else returncode - 128 if 128 < returncode < 160 else 0
    try:
        return signal.Signals(number) if number else None
    except ValueError:
        return None


def node_too_old(node_version: str | None) -> bool:
    """Whether ``node --version`` output names a Node older than :data:`MIN_NODE_MAJOR`."""
    found = _NODE_VERSION.search(node_version or "")
    return found is not None and int(found.group(1)) < MIN_NODE_MAJOR


def classify_failure(
    args: Sequence[str],
    returncode: int,
    stdout: str,
    stderr: str,
    *,
    node_version: str | None = None,
) -> QmdError:
    """Map a non-zero exit of ``qmd <args>`` to the most specific :class:`QmdError`.

    The message carries qmd's own output. It names the Node version as the cause only when
    that is what failed: qmd's output says so (a native module built for another Node), or
    the process crashed on a signal and ``node_version`` (``node --version`` of the Node that
    runs qmd) is older than :data:`MIN_NODE_MAJOR`.
    """
    command = "qmd " + " ".join(args[:2])
    detail = tail(stderr) or tail(stdout)
    text = f"{stderr}\n{stdout}"
    crash = signal_of(returncode)
    if _NODE_MISMATCH.search(text):
        message = f"{command} failed (exit {returncode}): Node version mismatch: {detail}"
        return QmdRuntimeBroken(message, args=args, returncode=returncode, stderr=stderr)
    if crash is not None and crash != signal.SIGKILL:
        message = f"{command} crashed with {crash.name} (exit {returncode})"
        if node_too_old(node_version):
            message += f"; Node {node_version} is too old (qmd 2.x needs Node >= {MIN_NODE_MAJOR})"
        message += f": {detail}" if detail else ""
        return QmdRuntimeBroken(message, args=args, returncode=returncode, stderr=stderr)
    for pattern, cls in _PATTERNS:
        if pattern.search(text):
            return cls(
                f"{command} failed (exit {returncode}): {detail}",
                args=args,
                returncode=returncode,
                stderr=stderr,
            )
    if crash is not None:
        detail = detail or "killed by SIGKILL (another process or the out-of-memory killer)"
    return QmdCommandError(
        f"{command} failed (exit {returncode}): {detail or 'no output'}",
        args=args,
        returncode=returncode,
        stderr=stderr,
    )
