"""The ``memwell`` command: JSON output, and one clear line (never a traceback) for mistakes."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner
from memwell.cli.main import cli, main
from memwell.runtime import factory
from memwell.testing.conformance import write_workspace

MEMWELL = str(Path(sys.executable).with_name("memwell"))
REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(autouse=True)
def _isolated_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[None]:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    for name in list(os.environ):
        if name.startswith("MEMWELL_") and name != "MEMWELL_LOAD_PLUGINS":
            monkeypatch.delenv(name)
    yield
    factory.close_all()


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    return write_workspace(tmp_path / "ws")


def run(args: list[str], tmp_path: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMWELL_")}
    env["XDG_CONFIG_HOME"] = str(tmp_path / "xdg")
    return subprocess.run(
        [MEMWELL, *args], capture_output=True, text=True, env=env, cwd=tmp_path, timeout=120
    )


def assert_one_error_line(proc: subprocess.CompletedProcess[str], code: int = 2) -> str:
    assert proc.returncode == code, (proc.stdout, proc.stderr)
    assert "Traceback" not in proc.stderr and "Traceback" not in proc.stdout
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith("error:")
    return lines[0]


# ---------------------------------------------------------------- user mistakes (subprocess)


def test_unknown_config_key_one_line(ws: Path, tmp_path: Path) -> None:
    config = ws / "memwell.toml"
    config.write_text("[query]\nmax_resluts = 3\n")
    line = assert_one_error_line(run(["-w", str(ws), "status"], tmp_path))
    assert "query.max_resluts" in line and str(config) in line


def test_missing_workspace_one_line(tmp_path: Path) -> None:
    missing = tmp_path / "no-such-ws"
    line = assert_one_error_line(run(["-w", str(missing), "search", "x"], tmp_path))
    assert str(missing) in line


def test_get_refuses_parent_paths(ws: Path, tmp_path: Path) -> None:
    (tmp_path / "secret.md").write_text("top secret\n")
    proc = run(["--provider", "none", "-w", str(ws), "get", "../secret.md"], tmp_path)
    line = assert_one_error_line(proc)
    assert "secret.md" in line
    assert "top secret" not in proc.stdout


def test_missing_config_file_one_line(ws: Path, tmp_path: Path) -> None:
    missing = tmp_path / "missing.toml"
    line = assert_one_error_line(run(["--config", str(missing), "-w", str(ws), "status"], tmp_path))
    assert str(missing) in line


# ---------------------------------------------------------------- user mistakes (in process)


def _main(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as info:
        main(args)
        raise SystemExit(0)
    out, err = capsys.readouterr()
    code = info.value.code
    return (code if isinstance(code, int) else 1), out, err


def test_bad_env_var_names_the_variable(
    ws: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("MEMWELL_QUERY__MAX_RESULTS", "abc")
    code, _, err = _main(["-w", str(ws), "status"], capsys)
    assert code == 2
    assert err.count("\n") == 1 and err.startswith("error:")
    assert "MEMWELL_QUERY__MAX_RESULTS" in err


def test_unknown_provider_one_line(ws: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = _main(["--provider", "nosuch", "-w", str(ws), "search", "x"], capsys)
    assert code == 2
    assert err.startswith("error:") and "'nosuch'" in err and err.count("\n") == 1


def test_unknown_backend_one_line(ws: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = _main(["--backend", "nosuch", "-w", str(ws), "status"], capsys)
    assert code == 2
    assert "'nosuch'" in err and "builtin" in err and "Traceback" not in err


@pytest.mark.parametrize(
    ("flag", "named"),
    [
        ("--backend", "unknown backend 'nosuch' given by --backend (installed: "),
        ("--provider", "unknown embedding provider 'nosuch' given by --provider (installed: "),
    ],
)
def test_an_unknown_flag_value_names_the_flag(
    flag: str, named: str, ws: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 40 item 5: the flag is named, not a config key the user never wrote."""
    code, _, err = _main([flag, "nosuch", "-w", str(ws), "search", "x"], capsys)
    assert code == 2
    assert err.startswith(f"error: {named}") and err.count("\n") == 1
    assert "config key" not in err
    (ws / "memwell.toml").write_text('backend = "nosuch"\n')
    code, _, err = _main(["-w", str(ws), "status"], capsys)
    assert code == 2 and "in config key 'backend'" in err, "a config value still names its key"


def test_get_past_the_end_says_how_long_the_file_is(
    ws: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 40 item 9: ``get --from`` past the end fails like a missing file (was a blank
    line and status 0)."""
    lines = (ws / "MEMORY.md").read_text().count("\n")
    args = ["--provider", "none", "-w", str(ws), "get", "MEMORY.md"]
    code, out, err = _main([*args, "--from", "999"], capsys)
    assert (code, out) == (2, "")
    assert err == f"error: MEMORY.md has {lines} lines; --from 999 is past the end\n"
    code, _, err = _main([*args, "--from", str(lines + 1), "--json"], capsys)
    assert code == 2 and f"has {lines} lines" in err
    code, out, _ = _main([*args, "--from", str(lines), "--lines", "5"], capsys)
    assert code == 0 and out.strip(), "the last line is still there"
    (ws / "memory" / "empty.md").write_text("")
    code, out, _ = _main(["--provider", "none", "-w", str(ws), "get", "memory/empty.md"], capsys)
    assert (code, out) == (0, "\n"), "an empty file read whole is not an error"


def test_write_under_a_bulleted_heading_adds_a_bullet(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 40 item 7, as the README runs it on the demo workspace."""
    ws = tmp_path / "demo"
    shutil.copytree(REPO / "examples" / "demo", ws)
    before = (ws / "MEMORY.md").read_text()
    args = ["--provider", "none", "-w", str(ws), "write", "--heading", "Preferences"]
    code, _, err = _main([*args, "Prefers tabs."], capsys)
    assert code == 0, err
    assert (ws / "MEMORY.md").read_text() == before.replace(
        "- Code review needs two approvals before merging to main.\n",
        "- Code review needs two approvals before merging to main.\n- Prefers tabs.\n",
    )


def test_usage_error_exit_code(ws: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = _main(["-w", str(ws), "search", "x", "--max-results", "0"], capsys)
    assert code == 2
    assert "max-results" in err and "Traceback" not in err


# ---------------------------------------------------------------- happy paths (CliRunner)


def test_search_json_keyword_only(ws: Path) -> None:
    result = CliRunner().invoke(
        cli, ["--provider", "none", "-w", str(ws), "search", "Zanzibar codename", "--json"]
    )
    assert result.exit_code == 0, (result.output, result.exception)
    data = json.loads(result.stdout)
    assert data["query"] == "Zanzibar codename"
    results = data["results"]
    assert isinstance(results, list) and results
    for item in results:
        assert {"path", "start_line", "end_line", "score", "snippet", "source"} <= set(item)
        assert 1 <= item["start_line"] <= item["end_line"]
        assert 0.0 <= item["score"] <= 1.0
    top = results[0]
    assert top["path"] == "memory/2026-01-02.md" and "Zanzibar" in top["snippet"]
    assert top["source"] == "memory"


def test_search_text_output_and_no_results(ws: Path) -> None:
    runner = CliRunner()
    hit = runner.invoke(cli, ["--provider", "none", "-w", str(ws), "search", "tomatoes"])
    assert hit.exit_code == 0, hit.output
    assert "memory/projects.md:" in hit.stdout and "score" in hit.stdout
    miss = runner.invoke(cli, ["--provider", "none", "-w", str(ws), "search", "xylophonequartz"])
    assert miss.exit_code == 0
    assert miss.stdout.strip() == "no results"


def test_search_warns_when_the_query_is_cut_to_max_chars(ws: Path) -> None:
    (ws / "memwell.toml").write_text("[query]\nmax_chars = 40\n")
    long_query = "Zanzibar codename " + "filler " * 20
    args = ["--provider", "none", "-w", str(ws), "search"]
    cut = CliRunner().invoke(cli, [*args, long_query])
    assert cut.exit_code == 0, (cut.output, cut.exception)
    assert "only its first 40 were searched" in cut.stderr
    assert "memory/2026-01-02.md" in cut.stdout
    whole = CliRunner().invoke(cli, [*args, "Zanzibar codename"])
    assert "were searched" not in whole.stderr


def test_get_prints_exact_lines(ws: Path) -> None:
    runner = CliRunner()
    args = ["--provider", "none", "-w", str(ws), "get", "MEMORY.md", "--from", "3", "--lines", "1"]
    result = runner.invoke(cli, args)
    assert result.exit_code == 0, result.output
    assert result.stdout == "The staging database listens on port 5433.\n"
    as_json = runner.invoke(cli, [*args, "--json"])
    assert json.loads(as_json.stdout) == {
        "path": "MEMORY.md",
        "text": "The staging database listens on port 5433.",
        "start_line": 3,
        "end_line": 3,
    }


def test_index_then_status_json(ws: Path) -> None:
    runner = CliRunner()
    indexed = runner.invoke(cli, ["--provider", "none", "-w", str(ws), "index"])
    assert indexed.exit_code == 0, indexed.output
    assert "indexed 3 files" in indexed.stdout and "fts-only" in indexed.stdout
    result = runner.invoke(cli, ["--provider", "none", "-w", str(ws), "status", "--json"])
    assert result.exit_code == 0, result.output
    status = json.loads(result.stdout)
    assert status["backend"] == "builtin"
    assert status["search_mode"] == "fts-only"
    assert status["files"] == 3 and status["chunks"] >= 3
    assert Path(status["workspace_dir"]).resolve() == ws.resolve()
    assert "fallback" in status  # aliases used in JSON
    text = runner.invoke(cli, ["--provider", "none", "-w", str(ws), "status"])
    assert "backend:    builtin" in text.stdout and "mode:       fts-only" in text.stdout


def test_workspace_from_env(ws: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMWELL_WORKSPACE", str(ws))
    result = CliRunner().invoke(cli, ["--provider", "none", "search", "autoscaler", "--json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["results"][0]["path"] == "memory/projects.md"


# ---------------------------------------------------------------- plugins and doctor (subprocess)


def test_plugins_json_lists_builtin(tmp_path: Path) -> None:
    proc = run(["plugins", "--json"], tmp_path)
    assert proc.returncode == 0, proc.stderr
    rows = {row["name"]: row for row in json.loads(proc.stdout)}
    builtin = rows["builtin"]
    assert builtin["status"] == "loaded"
    assert builtin["distribution"] == "memwell-sqlite"
    assert builtin["kinds"] == ["backend"]
    assert ["backend", "builtin"] in builtin["provides"]
    assert builtin["error"] is None
    text = run(["plugins"], tmp_path)
    assert any(
        line.startswith("builtin") and "memwell-sqlite" in line for line in text.stdout.splitlines()
    )


def test_doctor_reports_sqlite_and_fts5(tmp_path: Path) -> None:
    proc = run(["--provider", "none", "doctor"], tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert sqlite3.sqlite_version in proc.stdout
    assert "fts5" in proc.stdout
    assert "builtin" in proc.stdout
    report = json.loads(run(["--provider", "none", "doctor", "--json"], tmp_path).stdout)
    assert report["python"]["stdlib sqlite3"] == sqlite3.sqlite_version
    assert report["python"]["stdlib fts5"] == "yes"
    assert report["plugins"]["builtin"].startswith("loaded, API ")
    workspace = report["workspace"]
    assert workspace["backend"].startswith("builtin: ok")
    assert workspace["probe search"].startswith("ok")
    assert workspace["probe embedding"] == "skipped (keyword-only mode)"
    assert not (tmp_path / ".memwell").exists()  # doctor indexes nothing


def test_doctor_reports_a_failing_backend_and_provider(tmp_path: Path) -> None:
    proc = run(["--backend", "nosuch", "doctor"], tmp_path)
    assert proc.returncode == 1
    assert "FAILED: unknown backend 'nosuch' given by --backend" in proc.stdout
    report = json.loads(run(["--provider", "openai", "doctor", "--json"], tmp_path).stdout)
    steps = report["workspace"]
    assert steps["backend"].startswith("builtin: ok")
    assert steps["provider"].startswith("FAILED: openai") and "OPENAI_API_KEY" in steps["provider"]
    assert steps["probe embedding"].startswith("FAILED")
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "memwell.toml").write_text("backend = 3\n")
    proc = run(["-w", str(bad), "doctor"], tmp_path)
    assert proc.returncode == 1 and "config" in proc.stdout and "FAILED" in proc.stdout
    assert "sqlite_version" in report["backend builtin"]


# ---------------------------------------------- recall: search --stdin, warm, compress


def invoke_none(ws: Path, *args: str, stdin: str | None = None) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, ["--provider", "none", "-w", str(ws), *args], input=stdin)
    return result.exit_code, result.stdout, result.stderr


def test_search_stdin_prints_one_json_line_per_query(ws: Path) -> None:
    code, out, _ = invoke_none(
        ws, "search", "--stdin", "-n", "3", stdin="Zanzibar codename\n\n tomatoes \n"
    )
    assert code == 0, out
    records = [json.loads(line) for line in out.splitlines()]
    assert [r["query"] for r in records] == ["Zanzibar codename", "tomatoes"]
    for record in records:
        code, single, _ = invoke_none(ws, "search", record["query"], "-n", "3", "--json")
        assert json.loads(single)["results"] == record["results"]
    assert records[0]["results"][0]["path"] == "memory/2026-01-02.md"


def test_search_needs_exactly_one_query_source(ws: Path) -> None:
    assert invoke_none(ws, "search")[0] == 2
    assert invoke_none(ws, "search", "x", "--stdin", stdin="y\n")[0] == 2


def test_status_reports_the_recall_cache(ws: Path) -> None:
    code, out, _ = invoke_none(ws, "status")
    assert code == 0 and "recall cache: on; hits/misses exact 0/0" in out
    assert "semantic off (the backend has no query embedder" in out
    code, out, _ = invoke_none(ws, "status", "--json")
    cache = json.loads(out)["recall_cache"]
    assert cache["enabled"] and cache["max_entries"] == 1000 and cache["semantic"] is None


def test_warm(ws: Path) -> None:
    code, out, _ = invoke_none(ws, "warm")
    assert code == 0 and out.startswith("warm in ") and "chunks (fts-only" in out


def test_compress_a_transcript(ws: Path, tmp_path: Path) -> None:
    lines = [
        {"type": "message", "message": {"role": "user", "content": "Let's use Postgres 16."}},
        {"type": "message", "message": {"role": "assistant", "content": "Noted. " * 60}},
        {"type": "message", "message": {"role": "user", "content": "ok"}},
        {"type": "message", "message": {"role": "user", "content": "ok"}},
    ]
    transcript = tmp_path / "session.jsonl"
    transcript.write_text("\n".join(json.dumps(line) for line in lines) + "\n")
    code, out, _ = invoke_none(ws, "compress", str(transcript), "--budget", "180", "--json")
    assert code == 0, out
    data = json.loads(out)
    assert data["level"] == "light" and data["fits"] and data["dropped_turns"] == 1
    assert data["tokenizer"].startswith("estimate")
    assert data["turns"][0] == {"role": "user", "content": "Let's use Postgres 16."}
    code, out, err = invoke_none(ws, "compress", str(transcript), "--budget", "50")
    assert code == 0 and "level heavy" in err and '"decisions": ["Let\'s use Postgres 16."]' in out
    empty = tmp_path / "empty.jsonl"
    empty.write_text("not json\n")
    assert invoke_none(ws, "compress", str(empty), "--budget", "10")[0] == 2


def test_log_lines_carry_one_memwell_prefix(ws: Path, tmp_path: Path) -> None:
    assert run(["--provider", "none", "-w", str(ws), "index"], tmp_path).returncode == 0
    (index,) = (ws / ".memwell").glob("index-*.sqlite")
    index.write_bytes(b"not a database" * 100)
    proc = run(["--provider", "none", "-w", str(ws), "search", "alpha"], tmp_path)
    assert proc.returncode == 0, proc.stderr
    warnings = [line for line in proc.stderr.splitlines() if "damaged" in line]
    assert warnings and all(line.startswith("memwell: index ") for line in warnings), proc.stderr
    assert "memwell: memwell:" not in proc.stderr
