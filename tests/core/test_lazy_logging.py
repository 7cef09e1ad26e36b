"""Loggers import :mod:`logging` on first use (start-up, issue 22): a one-shot keyword search
never imports it, and a record logged later still gets the CLI's handler and prefix."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest


def _run(
    code: str, *args: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", code, *args], capture_output=True, text=True, env=env, check=True
    )


def test_a_one_shot_keyword_search_does_not_import_logging(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    (ws / "memory").mkdir(parents=True)
    (ws / "memory" / "ports.md").write_text("The amber service listens on port 8125.\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMWELL_")}
    env.update(XDG_CONFIG_HOME=str(tmp_path / "xdg"), XDG_CACHE_HOME=str(tmp_path / "cache"))
    base = ["--provider", "none", "-w", str(ws)]
    subprocess.run(
        [sys.executable, "-m", "memwell", *base, "index"], check=True, capture_output=True, env=env
    )
    probe = (
        "import sys\nfrom memwell.cli.main import main\n"
        "try:\n    main(sys.argv[1:])\nexcept SystemExit:\n    pass\n"
        "print('LOGGING', 'logging' in sys.modules)\n"
    )
    done = _run(probe, *base, "search", "which port does amber listen on", "--no-sync", env=env)
    assert "ports.md" in done.stdout
    assert done.stdout.splitlines()[-1] == "LOGGING False"


DEFERRED = """
import sys
from memwell.util.lazy_import import defer_logging_setup, lazy_logger
from memwell.cli.main import _configure_logging
log = lazy_logger("memwell.demo")
defer_logging_setup(_configure_logging)
print("before", "logging" in sys.modules)
log.info("not shown at the default level")
log.warning("memwell: already prefixed")
log.warning("the %s one", "plain")
print("after", "logging" in sys.modules, log.name, log.getEffectiveLevel())
"""


def test_a_deferred_setup_runs_before_the_first_record() -> None:
    done = _run(DEFERRED)
    assert done.stdout.split("\n")[:2] == ["before False", "after True memwell.demo 30"]
    assert done.stderr.splitlines() == ["memwell: already prefixed", "memwell: the plain one"]


def test_a_setup_deferred_after_logging_is_imported_runs_at_once() -> None:
    code = (
        "import logging\nfrom memwell.util.lazy_import import defer_logging_setup\n"
        "defer_logging_setup(lambda: print('ran'))\nprint('next')\n"
    )
    assert _run(code).stdout.split() == ["ran", "next"]


@pytest.mark.parametrize(("flag", "shown"), [([], False), (["-v"], True)])
def test_the_cli_logs_info_only_when_verbose(tmp_path: Path, flag: list[str], shown: bool) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMWELL_")}
    env.update(XDG_CONFIG_HOME=str(tmp_path / "xdg"), XDG_CACHE_HOME=str(tmp_path / "cache"))
    code = (
        "import sys\nfrom memwell.cli.main import cli\n"
        "from memwell.util.lazy_import import lazy_logger\n"
        "@cli.command('demo-log')\ndef demo() -> None:\n"
        "    lazy_logger('memwell.demo').info('an info line')\n"
        "cli.main(sys.argv[1:], standalone_mode=False)\n"
    )
    done = _run(code, *flag, "-w", str(tmp_path), "demo-log", env=env)
    assert ("memwell: an info line" in done.stderr.splitlines()) is shown


REFUSED_PATH = """
import sys
from memwell.runtime.factory import open_memory
from memwell.agent.tools import execute_tool
memory = open_memory(sys.argv[1], overrides={"provider": "none", "sync": {"watch": False}})
if sys.argv[2] == "configured":
    import logging
    logging.basicConfig(format="app: %(message)s")
payload = execute_tool("memory_get", {"path": "../outside.md"}, memory)
memory.close()
print(payload["error"])
"""


@pytest.mark.parametrize("setup", ["library", "configured"])
def test_a_library_call_prints_nothing_unless_the_application_logs(
    tmp_path: Path, setup: str
) -> None:
    """execute_tool reports a refused path in its payload; stderr stays quiet (no last-resort
    handler) unless the application configured logging, which then gets the record."""
    (tmp_path / "ws" / "memory").mkdir(parents=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMWELL_")}
    env.update(XDG_CONFIG_HOME=str(tmp_path / "xdg"), MEMWELL_LOAD_PLUGINS="builtin")
    done = _run(REFUSED_PATH, str(tmp_path / "ws"), setup, env=env)
    assert "path not allowed" in done.stdout
    if setup == "library":
        assert done.stderr == ""
    else:
        assert done.stderr.startswith("app: memory_get failed for '../outside.md'")
