"""``query.hybrid.enabled = false``: searches run on vectors alone and say so (issue 40 item 6),
in the status, the search payload and the CLI's status and search JSON."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner
from memwell.cli.main import cli
from memwell.contract.manager import MemorySearchManager
from memwell.registry.plugins import PluginRegistry, set_registry
from memwell.runtime.search_report import search_report

OpenFn = Callable[..., MemorySearchManager]
VECTOR_ONLY = {"hybrid": {"enabled": False}}


def test_status_and_search_report_say_vector_only(open_ws: OpenFn, workspace: Path) -> None:
    memory = open_ws(workspace, query=VECTOR_ONLY)
    memory.sync()
    assert memory.search("Zanzibar codename")
    status = memory.status()
    assert status.search_mode == "vector-only"
    report = search_report(status)
    assert report["mode"] == "vector-only" and not report["degraded"]
    assert open_ws(workspace).status().search_mode == "hybrid"
    assert open_ws(workspace, provider="none", query=VECTOR_ONLY).status().search_mode == (
        "fts-only"
    ), "without a provider the keyword index answers whatever the setting"


@pytest.fixture
def cli_registry(registry: PluginRegistry) -> Iterator[None]:
    set_registry(registry)
    yield
    set_registry(None)


@pytest.mark.usefixtures("cli_registry")
def test_cli_status_and_search_json_say_vector_only(workspace: Path) -> None:
    (workspace / "memwell.toml").write_text("[query.hybrid]\nenabled = false\n")
    args = ["--provider", "hash", "-w", str(workspace)]
    found = CliRunner().invoke(cli, [*args, "search", "Zanzibar codename", "--json"])
    assert found.exit_code == 0, (found.output, found.exception)
    assert json.loads(found.stdout)["mode"] == "vector-only"
    status = CliRunner().invoke(cli, [*args, "status"])
    assert "mode:       vector-only" in status.stdout
    assert json.loads(CliRunner().invoke(cli, [*args, "status", "--json"]).stdout)[
        "search_mode"
    ] == ("vector-only")
