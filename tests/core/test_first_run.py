"""What a new user runs into first (issue 16 items 4-6): no silent failures, readable
results, session hits that open. CLI tests run in-process in keyword-only mode (fast)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import click
import pytest
from click.testing import CliRunner, Result
from memwell.agent.tools import memory_get
from memwell.cli.main import cli
from memwell.cli.progress import progress_text
from memwell.cli.render import hit_lines, query_pattern
from memwell.contract.models import SyncProgress
from memwell.runtime import factory

MEMWELL = str(Path(sys.executable).with_name("memwell"))
KEYWORD_ONLY = ["--provider", "none"]


@pytest.fixture(autouse=True)
def _isolated_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[None]:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    for name in list(os.environ):
        if name.startswith("MEMWELL_") and name != "MEMWELL_LOAD_PLUGINS":
            monkeypatch.delenv(name)
    yield
    factory.close_all()


def invoke(*args: str) -> Result:
    return CliRunner().invoke(cli, [*KEYWORD_ONLY, *args])


def _run(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMWELL_")}
    env.update(XDG_CONFIG_HOME=str(tmp_path / "xdg"), XDG_CACHE_HOME=str(tmp_path / "cache"))
    return subprocess.run(
        [MEMWELL, *args], capture_output=True, text=True, env=env, cwd=tmp_path, timeout=120
    )


# -- item 5: no silent failures ---------------------------------------------------------------


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads files whatever their mode")
def test_unreadable_file_and_directory_are_reported_and_counted(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    (ws / "memory" / "locked").mkdir(parents=True)
    (ws / "memory" / "ok.md").write_text("Pelicans nest by the lake.\n")
    (ws / "memory" / "secret.md").write_text("Never seen.\n")
    (ws / "memory" / "locked" / "inner.md").write_text("Never seen either.\n")
    (ws / "memory" / "secret.md").chmod(0)
    (ws / "memory" / "locked").chmod(0)
    try:
        indexed = _run(tmp_path, *KEYWORD_ONLY, "-w", str(ws), "index")
        status = _run(tmp_path, *KEYWORD_ONLY, "-w", str(ws), "status", "--json")
    finally:
        (ws / "memory" / "secret.md").chmod(0o644)
        (ws / "memory" / "locked").chmod(0o755)
    assert indexed.returncode == 0, indexed.stderr
    assert "could not read memory/secret.md" in indexed.stderr
    assert "could not read memory/locked" in indexed.stderr
    unreadable = json.loads(status.stdout)["unreadable"]
    assert len(unreadable) == 2 and "Permission denied" in unreadable[0]


def test_unreadable_entries_are_reported_in_status_even_as_root(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The same reporting with permission errors injected (file modes do not stop root)."""
    ws = tmp_path / "ws"
    (ws / "memory" / "locked").mkdir(parents=True)
    (ws / "memory" / "ok.md").write_text("Pelicans nest by the lake.\n")
    (ws / "memory" / "secret.md").write_text("Never seen.\n")
    real_open, real_scandir = os.open, os.scandir

    def deny_open(path: object, *args: object, **kwargs: object) -> int:
        if str(path).endswith("secret.md"):
            raise PermissionError(13, "Permission denied", str(path))
        return real_open(path, *args, **kwargs)  # type: ignore[arg-type]

    def deny_scandir(path: object = ".") -> object:
        if str(path).endswith("locked"):
            raise PermissionError(13, "Permission denied", str(path))
        return real_scandir(path)  # type: ignore[arg-type]

    monkeypatch.setattr(os, "open", deny_open)
    monkeypatch.setattr(os, "scandir", deny_scandir)
    indexed = invoke("-w", str(ws), "index")
    assert indexed.exit_code == 0, indexed.output
    assert "indexed 1 files" in indexed.stdout
    factory.close_all()  # status from a new manager: read from the index
    status = json.loads(invoke("-w", str(ws), "status", "--json").stdout)
    assert sorted(status["unreadable"]) == [
        "memory/locked: Permission denied",
        "memory/secret.md: Permission denied",
    ]
    text = invoke("-w", str(ws), "status").stdout
    assert "unreadable: 2 (" in text


def test_utf16_with_bom_and_upper_case_and_markdown_suffixes_are_indexed(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    (ws / "memory").mkdir(parents=True)
    (ws / "memory" / "windows.md").write_bytes(
        "\ufeffThe kiln fires at 1200 degrees.\r\nSecond line.\n".encode("utf-16-le")
    )
    (ws / "memory" / "be.md").write_bytes("\ufeffGlaze recipe: cobalt.\n".encode("utf-16-be"))
    (ws / "memory" / "NOTES.MD").write_text("Clay arrives on Tuesdays.\n")
    (ws / "memory" / "long.markdown").write_text("Wheel throwing class at noon.\n")
    for query, path in [
        ("kiln degrees", "memory/windows.md"),
        ("cobalt glaze", "memory/be.md"),
        ("clay tuesdays", "memory/NOTES.MD"),
        ("wheel throwing", "memory/long.markdown"),
    ]:
        found = invoke("-w", str(ws), "search", query, "--json")
        results = json.loads(found.stdout)["results"]
        assert results and results[0]["path"] == path, (query, results)
    got = invoke("-w", str(ws), "get", "memory/windows.md", "--from", "1", "--lines", "1")
    assert got.stdout.rstrip() == "The kiln fires at 1200 degrees."


def test_keyword_only_mode_says_so_once_with_how_to_turn_semantic_on(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    (ws / "memory").mkdir(parents=True)
    (ws / "memory" / "a.md").write_text("The kiln fires at 1200 degrees.\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMWELL_")}
    env.update(XDG_CONFIG_HOME=str(tmp_path / "xdg"), MEMWELL_LOAD_PLUGINS="builtin")
    done = subprocess.run(
        [MEMWELL, "-w", str(ws), "search", "kiln"], capture_output=True, text=True, env=env
    )
    assert done.returncode == 0, done.stderr
    notes = [line for line in done.stderr.splitlines() if "semantic search is off" in line]
    assert len(notes) == 1 and "install memwell-local" in notes[0]
    asked = _run(tmp_path, *KEYWORD_ONLY, "-w", str(ws), "search", "kiln")
    assert "semantic search is off" not in asked.stderr, "not when keyword-only was asked for"


def test_empty_workspace_and_wrong_workspace_get_a_hint(tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    done = _run(tmp_path, *KEYWORD_ONLY, "-w", str(empty), "search", "anything")
    assert done.returncode == 0
    assert done.stdout.strip() == "no results"
    assert "no memory files indexed in" in done.stderr and "-w DIR" in done.stderr
    wrong = _run(tmp_path, *KEYWORD_ONLY, "-w", str(tmp_path / "nope"), "search", "anything")
    assert wrong.returncode == 2
    assert wrong.stderr.startswith("error: workspace") and "is not a directory" in wrong.stderr


def test_get_of_a_missing_file_fails_and_the_tool_says_not_found(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    (ws / "memory").mkdir(parents=True)
    done = _run(tmp_path, *KEYWORD_ONLY, "-w", str(ws), "get", "memory/nope.md")
    assert done.returncode == 2
    assert done.stderr.strip() == "error: no such memory file: memory/nope.md"
    manager = factory.open_memory(ws, overrides={"provider": "none", "sync": {"watch": False}})
    payload = memory_get(manager, "memory/nope.md")
    assert payload == {
        "path": "memory/nope.md",
        "text": "",
        "error": "not found: no such memory file: memory/nope.md",
        "reason": "not_found",
    }


def test_a_stop_word_only_query_returns_nothing(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    (ws / "memory").mkdir(parents=True)
    (ws / "memory" / "a.md").write_text("What is the plan? It is the one we made.\n")
    found = invoke("-w", str(ws), "search", "what is the", "--json", "--min-score", "0")
    assert json.loads(found.stdout)["results"] == []


@pytest.mark.parametrize(
    "args",
    [
        ["search"],  # missing argument
        ["no-such-command"],
        ["search", "x", "--max-results", "0"],
        ["--bogus-flag"],
    ],
)
def test_every_usage_error_uses_the_one_error_form(tmp_path: Path, args: list[str]) -> None:
    done = _run(tmp_path, *args)
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), done.stderr
    assert "Error:" not in done.stderr and "Traceback" not in done.stderr


# -- item 6: session hits can be opened -------------------------------------------------------

TRANSCRIPT = "\n".join(
    [
        json.dumps({"type": "session", "id": "s1"}),
        json.dumps({"type": "message", "message": {"role": "user", "content": "Deploy window?"}}),
        json.dumps({"type": "tool", "name": "x"}),
        json.dumps(
            {
                "type": "message",
                "message": {
                    "role": "assistant",
                    "content": [
                        {"type": "text", "text": "Fridays. Token sk-abcdefghijklmnopqrstuv1234"}
                    ],
                },
            }
        ),
    ]
)


def test_session_hits_open_with_get_and_memory_get_as_redacted_text(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    (ws / "sessions").mkdir(parents=True)
    (ws / "sessions" / "chat.jsonl").write_text(TRANSCRIPT + "\n")
    (ws / "memwell.toml").write_text('sources = ["memory", "sessions"]\n')
    found = invoke("-w", str(ws), "search", "deploy window fridays", "--json")
    hit = json.loads(found.stdout)["results"][0]
    assert hit["path"] == "sessions/chat.jsonl" and hit["source"] == "sessions"
    args = ["get", hit["path"], "--from", str(hit["start_line"])]
    args += ["--lines", str(hit["end_line"] - hit["start_line"] + 1)]
    got = invoke("-w", str(ws), *args)
    assert got.exit_code == 0, got.output
    lines = got.stdout.splitlines()
    assert lines[0] == "User: Deploy window?"
    assert lines[1].startswith("Assistant: Fridays. Token ") and "abcdefghijklmnop" not in lines[1]
    assert lines[1] in hit["snippet"], "the same redacted text that was indexed"
    one = invoke("-w", str(ws), "get", hit["path"], "--from", "4", "--lines", "1", "--json")
    payload = json.loads(one.stdout)
    assert payload["text"] == lines[1] and payload["start_line"] == 4
    manager = factory.open_memory(ws, overrides={"provider": "none", "sync": {"watch": False}})
    tool = memory_get(manager, "sessions/chat.jsonl", from_line=2, lines=1)
    assert tool == {
        "path": "sessions/chat.jsonl",
        "text": "User: Deploy window?",
        "start_line": 2,
        "end_line": 2,
        "untrusted_data": True,
    }
    for bad in ("sessions/../memwell.toml", "sessions/chat.txt", "sessions/sub/chat.jsonl"):
        assert memory_get(manager, bad)["text"] == ""


def test_session_hits_print_their_jsonl_line_numbers(tmp_path: Path) -> None:
    """Issue 40 item 12: transcript lines are numbered like a memory file's (by JSONL line)."""
    ws = tmp_path / "ws"
    (ws / "sessions").mkdir(parents=True)
    (ws / "sessions" / "chat.jsonl").write_text(TRANSCRIPT + "\n")
    (ws / "memwell.toml").write_text('sources = ["memory", "sessions"]\n')
    out = invoke("-w", str(ws), "search", "deploy window fridays").stdout
    assert "sessions/chat.jsonl:2-4  score" in out
    assert "  2: User: Deploy window?\n  4: Assistant: Fridays. Token " in out


def test_transcripts_in_the_reference_layout_are_indexed_and_read(tmp_path: Path) -> None:
    """Issue 40 item 13: ``sessions/<sessionKey>/transcripts/*.jsonl`` is walked, under the
    same path rules: a symlinked folder leading out of the sessions folder is neither indexed
    nor read."""
    ws = tmp_path / "ws"
    transcripts = ws / "sessions" / "agent-main" / "transcripts"
    transcripts.mkdir(parents=True)
    (transcripts / "chat.jsonl").write_text(TRANSCRIPT + "\n")
    outside = tmp_path / "outside" / "transcripts"
    outside.mkdir(parents=True)
    (outside / "leak.jsonl").write_text(
        json.dumps({"type": "message", "message": {"role": "user", "content": "zebra deploy"}})
    )
    os.symlink(outside.parent, ws / "sessions" / "escape")
    (ws / "memwell.toml").write_text('sources = ["memory", "sessions"]\n')
    found = json.loads(invoke("-w", str(ws), "search", "deploy window zebra", "--json").stdout)
    assert [hit["path"] for hit in found["results"]] == [
        "sessions/agent-main/transcripts/chat.jsonl"
    ]
    got = invoke("-w", str(ws), "get", "sessions/agent-main/transcripts/chat.jsonl", "--from", "2")
    assert got.exit_code == 0 and got.stdout.startswith("User: Deploy window?\nAssistant: ")
    leak = _run(
        tmp_path, *KEYWORD_ONLY, "-w", str(ws), "get", "sessions/escape/transcripts/leak.jsonl"
    )
    assert leak.returncode == 2, leak.stderr
    assert (
        leak.stderr.startswith("error: ") and "symlink: sessions/escape/transcripts/" in leak.stderr
    )
    manager = factory.open_memory(ws, overrides={"provider": "none", "sync": {"watch": False}})
    assert "zebra" not in str(memory_get(manager, "sessions/escape/transcripts/leak.jsonl"))
    for bad in ("sessions/agent-main/chat.jsonl", "sessions/agent-main/transcripts/../x.jsonl"):
        assert memory_get(manager, bad)["text"] == ""


def test_transcripts_are_not_readable_when_sessions_are_not_indexed(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    (ws / "sessions").mkdir(parents=True)
    (ws / "sessions" / "chat.jsonl").write_text(TRANSCRIPT + "\n")
    manager = factory.open_memory(ws, overrides={"provider": "none", "sync": {"watch": False}})
    assert "not a Markdown file" in memory_get(manager, "sessions/chat.jsonl")["error"]


# -- item 4: progress and readable results ----------------------------------------------------


def test_progress_text_has_files_chunks_rate_and_eta() -> None:
    p = SyncProgress(completed=10, total=40, chunks=30, total_chunks=120)
    assert progress_text("indexing", p, 3.0) == (
        "indexing: 10/40 files, 30/120 chunks, 10.0 chunks/s, ETA 9 s"
    )


def test_search_that_indexes_first_says_so_with_progress(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    (ws / "memory").mkdir(parents=True)
    for i in range(70):
        (ws / "memory" / f"n{i}.md").write_text(f"Note {i}: the kiln number {i}.\n")
    done = _run(tmp_path, *KEYWORD_ONLY, "-w", str(ws), "search", "kiln")
    assert "indexing before searching: 70/70 files, 70/70 chunks" in done.stderr


def test_results_show_numbered_matching_lines_deep_in_a_long_chunk() -> None:
    text = "\n".join([f"filler line {i}" for i in range(20)] + ["The answer: port 5433."])
    rows, left_out = hit_lines(list(enumerate(text.split("\n"), 5)), query_pattern("which port?"))
    assert rows == [(25, "The answer: port 5433.")] and left_out == 0


def test_terminal_results_render_line_numbers(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "MEMORY.md").write_text("# Memory\n\n" + "filler\n" * 12 + "Staging listens on 5433.\n")
    out = invoke("-w", str(ws), "search", "staging").stdout
    assert "MEMORY.md:1-16" in out and "  15: Staging listens on 5433." in out


# -- item 3: lazy commands, plugin commands from the hook ---------------------------------------


def _group(loads: list[int]) -> click.Group:
    from memwell.cli.lazy import LazyGroup

    @click.group(cls=LazyGroup)
    def group() -> None:
        pass

    def loader(target: click.Group) -> None:
        loads.append(1)

        @target.command(name="extra")
        def extra() -> None:
            """Run the plugin's command."""
            click.echo("extra ran")

    assert isinstance(group, LazyGroup)
    group.add_lazy_command("later", "memwell.cli.eval_command", "Imported when it runs.")
    group.plugin_loader = loader
    return group


def test_plugin_commands_are_listed_from_a_cache_and_load_when_run() -> None:
    loads: list[int] = []
    first = CliRunner().invoke(_group(loads), ["--help"])
    assert "extra" in first.output and "Run the plugin's command." in first.output
    assert "later" in first.output and "Imported when it runs." in first.output
    assert loads == [1]
    second = CliRunner().invoke(_group(loads), ["--help"])
    assert "Run the plugin's command." in second.output
    assert loads == [1], "the second help screen came from the cache: no plugin imported"
    ran = CliRunner().invoke(_group(loads), ["extra"])
    assert ran.output == "extra ran\n" and loads == [1, 1]


def test_help_imports_no_plugin_and_no_pydantic(tmp_path: Path) -> None:
    probe = (
        "import sys\n"
        "from memwell.cli.main import main\n"
        "try:\n"
        "    main(['--help'])\n"
        "except SystemExit:\n"
        "    pass\n"
        "heavy = [m for m in ('pydantic', 'numpy', 'mcp', 'memwell_sqlite',"
        " 'memwell.runtime.factory')"
        " if m in sys.modules]\n"
        "print('HEAVY', heavy)\n"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMWELL_")}
    env["XDG_CACHE_HOME"] = str(tmp_path / "cache")
    for _ in range(2):  # the first run fills the plugin command cache
        out = subprocess.run(
            [sys.executable, "-c", probe], capture_output=True, text=True, env=env, check=True
        ).stdout
    assert "HEAVY []" in out
