"""Running qmd: one process group per call, a hard timeout, capped output, no orphans.

Every call starts qmd in a new session (``start_new_session=True``) and, whatever happens,
ends by sending SIGKILL to that whole process group, so a launcher's child (``bin/qmd`` spawns
a second Node process) or a hung model download never outlives the call.
"""

from __future__ import annotations

import contextlib
import errno
import logging
import os
import re
import shutil
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Protocol

from .errors import (
    QmdError,
    QmdNotInstalled,
    QmdOutputError,
    QmdTimeout,
    classify_failure,
    signal_of,
    tail,
)

log = logging.getLogger(__name__)

_READ_CHUNK = 65536
_NOT_RUNNABLE = frozenset({errno.ENOENT, errno.EACCES, errno.ENOTDIR, errno.ENOEXEC})
_JOIN_SECONDS = 5.0
_NODE_PROBE_SECONDS = 5.0
_LAUNCHER_BYTES = 4096
_NODE_NAME = re.compile(r"^node(?:\d+)?$")
_NODE_IN_LAUNCHER = re.compile(r"""["']?(/[^\s"']*/node)["']?(?:\s|$)""")

EnvFactory = Callable[[float], Mapping[str, str]]
"""Builds the child environment for a call with the given timeout (seconds)."""


@dataclass(frozen=True)
class QmdOutput:
    """A finished qmd call that exited 0."""

    args: tuple[str, ...]
    stdout: str
    stderr: str
    seconds: float


class _Collector(threading.Thread):
    """Drains one pipe. ``keep="head"`` keeps the first ``cap`` bytes and calls ``overflow``
    past it; ``keep="tail"`` keeps only the last ``cap`` bytes."""

    def __init__(
        self, stream: IO[bytes], cap: int, keep: str, overflow: Callable[[], None]
    ) -> None:
        super().__init__(daemon=True)
        self.stream = stream
        self.cap = cap
        self.keep = keep
        self.overflow = overflow
        self.data = bytearray()
        self.overflowed = False

    def run(self) -> None:
        fd = self.stream.fileno()
        with self.stream:
            while chunk := os.read(fd, _READ_CHUNK):
                self.data += chunk
                if len(self.data) <= self.cap:
                    continue
                if self.keep == "tail":
                    del self.data[: len(self.data) - self.cap]
                elif not self.overflowed:
                    self.overflowed = True
                    del self.data[self.cap :]
                    self.overflow()

    def text(self) -> str:
        return self.data.decode("utf-8", errors="replace")


def kill_group(pid: int) -> None:
    """SIGKILL the process group led by ``pid``; a group that is already gone is fine."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)


class QmdRunner:
    """Runs ``argv + args`` with a per-call environment and working directory.

    :param argv: the qmd command, e.g. ``["/opt/node22/bin/node", ".../qmd.js"]``.
    :param cwd: the child's working directory (must have no ``.qmd`` config above it).
    :param env: builds the environment for a call from its timeout.
    :param max_output_bytes: cap on captured stdout; more is an error unless the call
        discards stdout (then only the tail is kept). stderr always keeps its tail.
    """

    def __init__(
        self, argv: Sequence[str], *, cwd: Path, env: EnvFactory, max_output_bytes: int
    ) -> None:
        self.argv = list(argv)
        self.cwd = cwd
        self.env = env
        self.max_output_bytes = max_output_bytes
        self._active: dict[int, subprocess.Popen[bytes]] = {}
        self._lock = threading.Lock()
        self._stopped = False

    def run(
        self, args: Sequence[str], *, timeout: float, discard_stdout: bool = False
    ) -> QmdOutput:
        """Run ``qmd <args>``; return its output or raise a :class:`QmdError`."""
        args = tuple(args)
        label = "qmd " + " ".join(args[:2])
        with self._lock:
            if self._stopped:
                raise QmdError(f"{label} not started: the qmd manager is closed", args=args)
            try:
                proc = subprocess.Popen(
                    [*self.argv, *args],
                    stdin=subprocess.DEVNULL,
                    stdout=subprocess.PIPE,
                    stderr=subprocess.PIPE,
                    cwd=self.cwd,
                    env=dict(self.env(timeout)),
                    start_new_session=True,
                )
            except OSError as exc:
                cls = QmdNotInstalled if exc.errno in _NOT_RUNNABLE else QmdError
                raise cls(
                    f"cannot run qmd command {self.argv!r}: {exc.strerror or exc}", args=args
                ) from exc
            self._active[proc.pid] = proc
        started = time.monotonic()
        assert proc.stdout is not None and proc.stderr is not None

        def overflow() -> None:
            kill_group(proc.pid)

        out = _Collector(
            proc.stdout, self.max_output_bytes, "tail" if discard_stdout else "head", overflow
        )
        err = _Collector(proc.stderr, self.max_output_bytes, "tail", overflow)
        out.start()
        err.start()
        timed_out = False
        try:
            proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            timed_out = True
        finally:
            kill_group(proc.pid)
            proc.wait()
            out.join(_JOIN_SECONDS)
            err.join(_JOIN_SECONDS)
            with self._lock:
                self._active.pop(proc.pid, None)
                stopped = self._stopped
        seconds = time.monotonic() - started
        stdout, stderr = out.text(), err.text()
        log.debug("%s -> rc %s in %.2fs", label, proc.returncode, seconds)
        if timed_out:
            raise QmdTimeout(
                f"{label} timed out after {timeout:g}s (process group killed)"
                + (f": {tail(stderr)}" if stderr.strip() else ""),
                args=args,
                stderr=stderr,
            )
        if out.overflowed:
            raise QmdOutputError(
                f"{label} printed more than {self.max_output_bytes} bytes", args=args
            )
        if stopped and proc.returncode < 0:
            raise QmdError(f"{label} was stopped: the qmd manager is closed", args=args)
        if proc.returncode != 0:
            node = self.node_version() if signal_of(proc.returncode) else None
            raise classify_failure(args, proc.returncode, stdout, stderr, node_version=node)
        return QmdOutput(args=args, stdout=stdout, stderr=stderr, seconds=seconds)

    def node_binary(self) -> str | None:
        """The Node that runs qmd: a ``node`` in the command, the one a launcher script names
        (``exec "/.../node" ...``), ``node`` on ``PATH`` for a ``#!/usr/bin/env node`` script;
        ``None`` when qmd is not run by Node as far as the command shows."""
        for part in self.argv:
            if _NODE_NAME.match(os.path.basename(part)):
                return part
        try:
            with open(self.argv[0], "rb") as handle:
                head = handle.read(_LAUNCHER_BYTES).decode("utf-8", errors="replace")
        except OSError:
            return None
        found = _NODE_IN_LAUNCHER.search(head)
        if found is not None:
            return found.group(1)
        shebang = head.splitlines()[0] if head.startswith("#!") else ""
        return shutil.which("node") if re.search(r"\bnode\b", shebang) else None

    def node_version(self) -> str | None:
        """``node --version`` of :meth:`node_binary` (``None`` if it cannot be asked)."""
        node = self.node_binary()
        if node is None:
            return None
        try:
            done = subprocess.run(
                [node, "--version"],
                capture_output=True,
                text=True,
                timeout=_NODE_PROBE_SECONDS,
                stdin=subprocess.DEVNULL,
            )
        except (OSError, subprocess.SubprocessError):
            return None
        return done.stdout.strip() or None

    def stop(self) -> None:
        """Refuse new calls and kill every running one (their ``run`` raises)."""
        with self._lock:
            self._stopped = True
            pids = list(self._active)
        for pid in pids:
            kill_group(pid)

    @property
    def active_pids(self) -> list[int]:
        """Process-group ids of the calls running now."""
        with self._lock:
            return list(self._active)


class CommandRunner(Protocol):
    """What runs qmd commands: :class:`QmdRunner`, or a :class:`StartupRunner` view of it."""

    def run(
        self, args: Sequence[str], *, timeout: float, discard_stdout: bool = False
    ) -> QmdOutput: ...


class StartupRunner:
    """A view of ``runner`` whose calls all finish by one deadline, ``seconds`` from now.

    Each call's timeout is cut to the time left; a call cut short (or not started because no
    time is left) raises :class:`QmdTimeout` naming ``timeouts.startup``, so a qmd that hangs
    at start-up cannot hold ``open_memory`` longer than that.
    """

    def __init__(self, runner: CommandRunner, seconds: float) -> None:
        self.runner = runner
        self.seconds = seconds
        self.deadline = time.monotonic() + seconds

    def _late(self, detail: str, args: Sequence[str], stderr: str = "") -> QmdTimeout:
        return QmdTimeout(
            f"qmd start-up did not finish within timeouts.startup = {self.seconds:g}s: {detail}",
            args=args,
            stderr=stderr,
        )

    def run(
        self, args: Sequence[str], *, timeout: float, discard_stdout: bool = False
    ) -> QmdOutput:
        left = self.deadline - time.monotonic()
        if left <= 0:
            raise self._late(f"qmd {' '.join(args[:2])} not started", args)
        try:
            return self.runner.run(args, timeout=min(timeout, left), discard_stdout=discard_stdout)
        except QmdTimeout as exc:
            if left >= timeout:
                raise
            raise self._late(str(exc), exc.qmd_args, exc.stderr) from exc
