"""The qmd command: where it is, the isolated environment it runs in, and its version."""

from __future__ import annotations

import logging
import os
import shutil
from collections.abc import Mapping, Sequence
from pathlib import Path

from .errors import QmdNotInstalled
from .modelfiles import ENV_VARS
from .parsing import parse_version
from .process import CommandRunner
from .state import QmdState

log = logging.getLogger(__name__)

PINNED_VERSION = (2, 8)
_DROPPED_ENV = frozenset({"CI", "INDEX_PATH", "HOME", "XDG_CONFIG_HOME", "XDG_CACHE_HOME"})


def shared_models_dir() -> Path:
    """The user's own qmd model cache (``$XDG_CACHE_HOME/qmd/models``)."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(Path.home(), ".cache")
    return Path(base) / "qmd" / "models"


def resolve_argv(argv: Sequence[str], workspace: Path) -> list[str]:
    """``argv`` with its program made absolute: a path relative to the workspace, or a name
    looked up on ``PATH`` (:class:`~memwell_qmd.errors.QmdNotInstalled` when absent)."""
    program = os.path.expanduser(argv[0])
    if os.sep in program:
        program = os.path.normpath(os.path.join(workspace, program))
    else:
        found = shutil.which(program)
        if found is None:
            raise QmdNotInstalled(
                f"qmd command {program!r} not found on PATH (install it with "
                "plugins/qmd_bridge/scripts/install_qmd.sh and set MEMWELL_QMD_COMMAND)"
            )
        program = found
    return [program, *argv[1:]]


def child_env(
    state: QmdState, pinned: Mapping[str, str], force_cpu: bool, timeout: float
) -> dict[str, str]:
    """The environment of a qmd call: isolated state, never ``CI`` or ``INDEX_PATH``."""
    env = {
        key: value
        for key, value in os.environ.items()
        if key not in _DROPPED_ENV and not key.startswith("QMD_")
    }
    env.update(
        HOME=str(state.home),
        XDG_CONFIG_HOME=str(state.config_home),
        XDG_CACHE_HOME=str(state.cache_home),
        QMD_CONFIG_DIR=str(state.config_dir),
        NO_COLOR="1",
        # a locked index should fail inside our timeout, not wait qmd's default 120 s
        QMD_SQLITE_BUSY_TIMEOUT=str(int(min(30.0, max(0.1, timeout / 2)) * 1000)),
    )
    for role, uri in pinned.items():
        env[ENV_VARS[role]] = uri
    if force_cpu:
        env["QMD_FORCE_CPU"] = "1"
    return env


def check_version(runner: CommandRunner, argv: Sequence[str], timeout: float) -> str:
    """``qmd --version`` as ``major.minor.patch``; a warning when it is not the pinned 2.8."""
    out = runner.run(["--version"], timeout=timeout)
    version = parse_version(out.stdout + out.stderr)
    if version is None:
        raise QmdNotInstalled(
            f"{list(argv)!r} does not look like qmd: --version printed "
            f"{(out.stdout + out.stderr).strip()[:200]!r}"
        )
    text = ".".join(map(str, version))
    if version[:2] != PINNED_VERSION:
        log.warning("qmd %s found; memwell-qmd is tested with qmd 2.8.x", text)
    return text
