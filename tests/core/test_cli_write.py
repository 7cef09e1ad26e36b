"""``memwell write`` and ``memwell recent``: text from an argument or stdin, each option, errors."""

from __future__ import annotations

# ruff: noqa: F811  (the pytest fixtures imported from test_cli are redefined as arguments)
import json
import os
import subprocess
from datetime import datetime
from pathlib import Path

import pytest
from click.testing import CliRunner
from memwell.cli.main import cli
from test_cli import MEMWELL, _isolated_env, ws  # noqa: F401  (the CLI tests' fixtures)


def invoke(ws: Path, *args: str, stdin: str | None = None) -> tuple[int, str]:
    result = CliRunner().invoke(cli, ["--provider", "none", "-w", str(ws), *args], input=stdin)
    return result.exit_code, result.output


def memwell(ws: Path, tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMWELL_")}
    env["XDG_CONFIG_HOME"] = str(tmp_path / "xdg")
    command = [MEMWELL, "--provider", "none", "-w", str(ws), *args]
    return subprocess.run(command, capture_output=True, text=True, env=env, timeout=120)


def test_write_argument_then_search_finds_it(ws: Path) -> None:
    code, out = invoke(ws, "write", "Marmalade release is frozen.")
    today = datetime.now().astimezone().strftime("%Y-%m-%d")
    assert code == 0 and out.startswith(f"append memory/{today}.md:3-3 (")
    code, out = invoke(ws, "search", "--no-sync", "Marmalade frozen")
    assert code == 0 and f"memory/{today}.md" in out


def test_write_from_stdin_under_a_heading_as_json(ws: Path) -> None:
    code, out = invoke(ws, "write", "-H", "Preferences", "--json", stdin="Dark roast only.\n")
    assert code == 0
    result = json.loads(out)
    assert result["path"] == "MEMORY.md" and result["heading_created"] is True
    assert (ws / "MEMORY.md").read_text().endswith("## Preferences\n\nDark roast only.\n")


def test_create_and_replace(ws: Path) -> None:
    assert invoke(ws, "write", "--create", "-f", "vendors", "Acme ships Mondays.")[0] == 0
    assert (ws / "memory/vendors.md").read_text() == "Acme ships Mondays.\n"
    code, out = invoke(ws, "write", "-f", "vendors", "--replace", "Mondays", "Fridays")
    assert code == 0 and out.startswith("replace memory/vendors.md:1-1")
    assert (ws / "memory/vendors.md").read_text() == "Acme ships Fridays.\n"


def test_recent_lists_the_written_file_first(ws: Path) -> None:
    invoke(ws, "write", "-f", "latest", "fresh")
    code, out = invoke(ws, "recent", "-n", "2")
    assert code == 0
    lines = out.splitlines()
    assert len(lines) == 2 and lines[0].endswith("memory/latest.md")
    code, out = invoke(ws, "recent", "--json")
    assert json.loads(out)[0]["path"] == "memory/latest.md"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["write", "-f", "../escape.md", "x"], "error: path not allowed"),
        (["write", "--create", "-f", "projects", "x"], "already exists"),
        (["write", "-f", "projects", "--replace", "missing text", "x"], "was not found"),
        (["write", "--supersede", "missing text", "--in", "projects", "x"], "was not found"),
        (["write", "   "], "blank"),
    ],
)
def test_refusals_are_one_line_with_status_2(
    ws: Path, tmp_path: Path, args: list[str], message: str
) -> None:
    before = {p: p.read_bytes() for p in ws.rglob("*.md")}
    proc = memwell(ws, tmp_path, *args)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1 and message in proc.stderr
    assert {p: p.read_bytes() for p in ws.rglob("*.md")} == before
    assert not (tmp_path / "escape.md").exists()


def test_write_settings_from_the_config_file(ws: Path, tmp_path: Path) -> None:
    (ws / "memwell.toml").write_text("[write]\nenabled = false\n")
    proc = memwell(ws, tmp_path, "write", "hello")
    assert proc.returncode == 2 and "memory writing is disabled" in proc.stderr
    (ws / "memwell.toml").write_text("[write]\nmax_bytes = 4\n")
    proc = memwell(ws, tmp_path, "write", "hello")
    assert proc.returncode == 2 and "limit per write is 4" in proc.stderr
    (ws / "memwell.toml").write_text("[write]\nmax_byte = 4\n")
    proc = memwell(ws, tmp_path, "write", "hello")
    assert proc.returncode == 2 and "unknown config key 'write.max_byte'" in proc.stderr


def test_write_marks_a_stated_fact_superseded_and_says_so(ws: Path) -> None:
    (ws / "memory").mkdir(exist_ok=True)
    old = ws / "memory/2026-03-02.md"
    old.write_text("# 2026-03-02\n\n- The staging database listens on port 5432.\n")
    code, out = invoke(ws, "write", "The staging database now listens on port 6432.")
    today = datetime.now().astimezone().strftime("%Y-%m-%d")
    assert code == 0
    assert "superseded memory/2026-03-02.md:3: - The staging database listens on port 5432." in out
    assert old.read_text().endswith(f"port 5432. *(superseded {today} by memory/{today}.md#L3)*\n")


def test_write_supersede_names_the_old_line(ws: Path) -> None:
    (ws / "memory").mkdir(exist_ok=True)
    old = ws / "memory/team.md"
    old.write_text("# team\n\nOn call: Priya.\n")
    code, out = invoke(
        ws, "write", "--supersede", "On call: Priya", "--in", "memory/team.md", "On call: Jonas."
    )
    assert code == 0 and out.startswith("supersede memory/")
    assert "superseded memory/team.md:3: On call: Priya." in out
    assert invoke(ws, "write", "--supersede", "x", "Jonas")[0] == 2  # --in missing
