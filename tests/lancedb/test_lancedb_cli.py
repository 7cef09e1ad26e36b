"""``memwell ltm`` through click's CliRunner, opening the workspace via the CLI Context."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path

import memwell_lancedb.plugin as lance_plugin
import pytest
from click.testing import CliRunner, Result
from memwell.cli.main import cli
from memwell.registry.plugins import PluginRegistry, set_registry
from memwell.runtime.factory import close_all

Invoke = Callable[..., Result]


@pytest.fixture
def run(
    registry: PluginRegistry, workspace: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[Invoke]:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    for name in ("MEMWELL_WORKSPACE", "MEMWELL_BACKEND", "MEMWELL_PROVIDER"):
        monkeypatch.delenv(name, raising=False)
    set_registry(registry)
    lance_plugin.memwell_cli_commands(cli=cli)
    runner = CliRunner()

    def invoke(*args: str, provider: str = "hash") -> Result:
        result = runner.invoke(
            cli, ["-w", str(workspace), "--provider", provider, *args], catch_exceptions=False
        )
        close_all()
        return result

    yield invoke
    set_registry(None)
    close_all()


def test_store_list_search_stats_forget_rebuild(run: Invoke, workspace: Path) -> None:
    assert run("ltm", "list").output.strip() == "no memories"
    from memwell.runtime.factory import open_memory
    from memwell_lancedb.manager import as_lance_manager

    memory = as_lance_manager(
        open_memory(workspace, overrides={"backend": "lancedb", "provider": "hash"})
    )
    assert memory is not None
    kept = memory.memories.store("I prefer vim keybindings", category="preference").memory
    gone = memory.memories.store("The printer is called inkwell", category="entity").memory
    close_all()

    listed = run("ltm", "list")
    assert listed.exit_code == 0
    assert kept.id in listed.output and "[preference]" in listed.output
    as_json = json.loads(run("ltm", "list", "--json", "-n", "1").output)
    assert len(as_json) == 1 and as_json[0]["id"] == gone.id  # newest first

    found = json.loads(run("ltm", "search", "vim keybindings", "--json").output)
    assert found["results"][0]["id"] == kept.id
    assert "vim keybindings" in run("ltm", "search", "vim keybindings").output
    assert run("ltm", "search", "quantum chromodynamics").output.strip() == "no memories found"

    stats = json.loads(run("ltm", "stats", "--json").output)
    assert stats["count"] == 2 and stats["categories"]["entity"] == 1 and stats["dims"] == 64
    assert "memories:   2" in run("ltm", "stats").output

    forgot = run("ltm", "forget", "--id", gone.id)
    assert forgot.exit_code == 0 and forgot.output.startswith("Forgot:")
    by_query = json.loads(run("ltm", "forget", "I prefer vim keybindings", "--json").output)
    assert by_query["action"] == "deleted" and by_query["id"] == kept.id
    assert run("ltm", "stats", "--json").output.count('"count": 0') == 1

    rebuilt = run("ltm", "rebuild")
    assert rebuilt.exit_code == 0 and "rebuilt 0 memories" in rebuilt.output


def test_cli_errors_are_one_line(run: Invoke) -> None:
    bad_id = run("ltm", "forget", "--id", "1 OR 1=1")
    assert bad_id.exit_code == 1 and "UUID" in bad_id.output
    usage = run("ltm", "forget")
    assert usage.exit_code == 2 and "either QUERY or --id" in usage.output
    missing = run("ltm", "rebuild")
    assert missing.exit_code == 1 and "no memory journal" in missing.output
    keyword_only = run("ltm", "stats", provider="none")
    assert keyword_only.exit_code == 1 and "embedding provider" in keyword_only.output
    assert "Traceback" not in missing.output + keyword_only.output
