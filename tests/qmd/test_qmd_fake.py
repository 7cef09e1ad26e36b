"""The bridge against the fake qmd: argv, environment, collections, mapping, modes, scheduling."""

from __future__ import annotations

import itertools
import json
import os
import subprocess
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest
import yaml
from memwell.contract.errors import BackendUnavailableError, PathNotAllowedError
from memwell_qmd.errors import QmdError, QmdNotInstalled, QmdOutputError, QmdTimeout
from memwell_qmd.manager import QmdMemoryManager
from qmd_helpers import QUIET, commands, qmd_processes, read_log

Make = Callable[..., QmdMemoryManager]


def _fake(exe: Path, state: Path, *args: str) -> str:
    """Run the fake qmd by hand against a manager's state (a 'foreign' user)."""
    env = {
        **os.environ,
        "XDG_CONFIG_HOME": str(state / "config"),
        "XDG_CACHE_HOME": str(state / "cache"),
        "QMD_CONFIG_DIR": str(state / "config" / "qmd"),
    }
    return subprocess.run(
        [str(exe), *args], env=env, capture_output=True, text=True, check=True, timeout=30
    ).stdout


def _gone(pid: int, seconds: float = 5.0) -> bool:
    """True once ``pid`` has exited (a zombie awaiting its reaper counts as exited)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            return True
        if state in ("Z", "X"):
            return True
        time.sleep(0.02)
    return False


def _models(tmp_path: Path) -> dict[str, str]:
    models = {}
    for role in ("embed", "generate", "rerank"):
        path = tmp_path / f"{role}.gguf"
        path.write_bytes(b"GGUF")
        models[role] = str(path)
    return models


class TestStartup:
    def test_isolated_env_cwd_and_collections(
        self,
        make_manager: Make,
        workspace: Path,
        fake_qmd: Path,
        tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch,
    ) -> None:
        monkeypatch.setenv("CI", "true")
        monkeypatch.setenv("INDEX_PATH", "/tmp/hijack.sqlite")
        monkeypatch.setenv("QMD_EMBED_MODEL", "hf:leaked/model.gguf")
        manager = make_manager(workspace, str(fake_qmd), **QUIET)
        state = workspace / ".memwell" / "qmd"
        log = read_log(tmp_path)
        assert [e["argv"][:3] for e in log] == [
            ["--version"],
            ["collection", "add", str(workspace)],
            ["collection", "add", str(workspace / "memory")],
        ]
        assert log[1]["argv"][3:] == ["--name", "memory-root", "--mask", "{MEMORY.md,memory.md}"]
        assert log[2]["argv"][3:] == ["--name", "memory-dir", "--mask", "**/*.md"]
        for entry in log:
            assert entry["env"]["CI"] is None and entry["env"]["INDEX_PATH"] is None
            assert entry["env"]["NO_COLOR"] == "1"
            assert entry["env"]["XDG_CACHE_HOME"] == str(state / "cache")
            assert entry["env"]["XDG_CONFIG_HOME"] == str(state / "config")
            assert entry["env"]["HOME"] == str(state / "home")
            assert entry["cwd"] == str(state / "run")
        manifest = json.loads((state / "managed.json").read_text())
        assert manifest["collections"] == ["memory-dir", "memory-root"]
        assert manager.status().custom["qmd"]["version"] == "2.8.3"

    def test_status_purpose_has_no_side_effects(
        self, make_manager: Make, workspace: Path, fake_qmd: Path, tmp_path: Path
    ) -> None:
        manager = make_manager(workspace, str(fake_qmd), purpose="status", **QUIET)
        status = manager.status()
        assert status.backend == "qmd" and status.files == 0
        assert [argv[0] for argv in commands(tmp_path)] == ["--version", "status"]
        with pytest.raises(BackendUnavailableError):
            manager.sync()

    def test_missing_binary(self, make_manager: Make, workspace: Path, tmp_path: Path) -> None:
        with pytest.raises(QmdNotInstalled, match="not found on PATH"):
            make_manager(workspace, "no-such-qmd-binary", **QUIET)
        with pytest.raises(QmdNotInstalled, match="cannot run"):
            make_manager(workspace, str(tmp_path / "nope" / "qmd"), **QUIET)

    def test_not_qmd(self, make_manager: Make, workspace: Path) -> None:
        with pytest.raises(QmdNotInstalled, match="does not look like qmd"):
            make_manager(workspace, ["/bin/echo", "hello"], **QUIET)

    def test_relative_command_is_relative_to_workspace(
        self, make_manager: Make, workspace: Path, fake_qmd: Path
    ) -> None:
        (workspace / "tools").symlink_to(fake_qmd.parent)
        manager = make_manager(workspace, "tools/qmd", **QUIET)
        assert manager.runner.argv == [str(workspace / "tools" / "qmd")]


class TestSearch:
    def test_results_map_to_workspace_paths_and_lines(
        self, make_manager: Make, workspace: Path, fake_qmd: Path, tmp_path: Path
    ) -> None:
        manager = make_manager(workspace, str(fake_qmd), **QUIET)
        [hit] = manager.search("Zanzibar", session_key="agent:main:telegram:group:42")
        assert hit.path == "memory/2026-01-02.md"
        assert (hit.start_line, hit.end_line) == (3, 4)
        assert "Zanzibar" in hit.snippet and hit.citation is None
        assert 0 <= hit.score <= 1 and hit.source == "memory"
        argv = commands(tmp_path)[-1]
        assert argv[:6] == ["search", "--json", "-n", "6", "--min-score", "0"]
        assert argv[-2:] == ["--", "Zanzibar"]
        assert argv.count("-c") == 2
        [cited] = manager.search("Zanzibar", session_key="agent:main:direct:7")
        assert cited.citation == "memory/2026-01-02.md#L3-L4"
        assert cited.snippet.endswith("Source: memory/2026-01-02.md#L3-L4")
        assert manager.search("   ") == [] and manager.search("x", sources=["sessions"]) == []

    def test_outside_collection_paths_and_reads(
        self, make_manager: Make, workspace: Path, fake_qmd: Path, tmp_path: Path
    ) -> None:
        team = tmp_path / "team"
        team.mkdir()
        (team / "plan.md").write_text("# Plan\n\nShip the quokka release.\n")
        (tmp_path / "secret.md").write_text("quokka secret\n")
        (team / "link.md").symlink_to(tmp_path / "secret.md")
        manager = make_manager(
            workspace, str(fake_qmd), collections=[{"path": str(team), "name": "Team"}], **QUIET
        )
        [hit] = manager.search("quokka")
        assert hit.path == "qmd/team/plan.md"
        assert manager.read_file(hit.path, from_line=3, lines=1).text == "Ship the quokka release."
        assert manager.read_file("qmd/team/missing.md").text == ""
        for bad in ("qmd/team/../secret.md", "qmd/nope/plan.md", "qmd/team/link.md", "qmd/team"):
            with pytest.raises(PathNotAllowedError):
                manager.read_file(bad)
        assert manager.read_file("MEMORY.md", from_line=3, lines=1).text.startswith("The staging")
        with pytest.raises(PathNotAllowedError):
            manager.read_file("../secret.md")

    def test_extra_collection_in_workspace_is_readable(
        self, make_manager: Make, workspace: Path, fake_qmd: Path
    ) -> None:
        (workspace / "docs").mkdir()
        (workspace / "docs" / "a.md").write_text("# A\n\nwombat facts\n")
        (workspace / "private.md").write_text("wombat private\n")
        manager = make_manager(workspace, str(fake_qmd), **QUIET, collections=[{"path": "docs"}])
        [hit] = manager.search("wombat")
        assert hit.path == "docs/a.md"
        assert "wombat" in manager.read_file("docs/a.md").text
        with pytest.raises(PathNotAllowedError):
            manager.read_file("private.md")

    def test_limits_dedupe_and_budget(
        self, make_manager: Make, workspace: Path, fake_qmd: Path
    ) -> None:
        for i in range(4):
            (workspace / "memory" / f"long-{i}.md").write_text("# L\n\n" + "marmot " * 200 + "\n")
        manager = make_manager(
            workspace, str(fake_qmd), **QUIET, max_snippet_chars=50, max_injected_chars=120
        )
        manager.sync()
        group = "agent:main:discord:channel:1"  # no citations in group chats
        results = manager.search("marmot", max_results=10, min_score=0.0, session_key=group)
        assert [len(r.snippet) for r in results] == [50, 50, 20]
        assert len(manager.search("marmot", max_results=1)) == 1
        assert manager.search("marmot", min_score=1.01) == []

    def test_keyword_rescue_when_no_document_has_every_term(
        self, make_manager: Make, workspace: Path, fake_qmd: Path, tmp_path: Path
    ) -> None:
        manager = make_manager(workspace, str(fake_qmd), **QUIET)
        results = manager.search("Which port does the staging database use for tomatoes?")
        assert {r.path for r in results} >= {"MEMORY.md", "memory/projects.md"}
        last = commands(tmp_path)[-1]
        assert last[0] == "query" and "--no-rerank" in last
        assert last[-1] == "lex: port\nlex: staging\nlex: database\nlex: use\nlex: tomatoes"
        assert manager.status().custom["qmd"]["last_search_fallback"] == "keyword-rescue"
        paths = {r.path for r in manager.search("tomatoes zanzibar")}
        assert paths == {"memory/projects.md", "memory/2026-01-02.md"}
        before = len(commands(tmp_path))
        assert manager.search("quetzal") == []
        assert len(commands(tmp_path)) == before + 1  # one term: nothing to rescue

    def test_query_is_cleaned(self, make_manager: Make, workspace: Path, fake_qmd: Path) -> None:
        manager = make_manager(workspace, str(fake_qmd), **QUIET)
        assert manager.search("Zanzibar\x00") != []
        assert isinstance(manager.search("x" * 200_000), list)

    def test_docid_lookup_when_file_is_missing(
        self,
        make_manager: Make,
        workspace: Path,
        fake_qmd: Path,
        monkeypatch: pytest.MonkeyPatch,
    ) -> None:
        import hashlib
        import sqlite3

        manager = make_manager(workspace, str(fake_qmd), **QUIET)
        body = (workspace / "memory" / "2026-01-02.md").read_text()
        digest = hashlib.sha256(body.encode()).hexdigest()
        with sqlite3.connect(manager.state.db_path) as conn:
            conn.execute("CREATE TABLE documents (collection, path, hash, active)")
            conn.execute(
                "INSERT INTO documents VALUES ('memory-dir', '2026-01-02.md', ?, 1)", (digest,)
            )
        monkeypatch.setenv("FAKE_QMD_FAULT", "nofile")
        [hit] = manager.search("Zanzibar")
        assert hit.path == "memory/2026-01-02.md"

    def test_missing_collection_is_recreated_and_search_retried(
        self, make_manager: Make, workspace: Path, fake_qmd: Path
    ) -> None:
        manager = make_manager(workspace, str(fake_qmd), **QUIET)
        _fake(fake_qmd, manager.state.root, "collection", "remove", "memory-dir")
        [hit] = manager.search("Zanzibar")
        assert hit.path == "memory/2026-01-02.md"
        assert "memory-dir" in manager.state.read_collections()

    def test_output_cap(
        self,
        make_manager: Make,
        workspace: Path,
        fake_qmd: Path,
        monkeypatch: pytest.MonkeyPatch,
    ) -> None:
        manager = make_manager(workspace, str(fake_qmd), **QUIET)
        monkeypatch.setenv("FAKE_QMD_FAULT", "big")
        with pytest.raises(QmdOutputError, match="more than 200000 bytes"):
            manager.search("Zanzibar")


class TestModes:
    def test_model_mode_without_models_uses_bm25(
        self, make_manager: Make, workspace: Path, fake_qmd: Path, tmp_path: Path
    ) -> None:
        manager = make_manager(
            workspace, str(fake_qmd), **QUIET, search_mode="query", models={"embed": "nope.gguf"}
        )
        assert manager.search("Zanzibar")[0].path == "memory/2026-01-02.md"
        assert commands(tmp_path)[-1][0] == "search"
        status = manager.status()
        assert status.search_mode == "fts-only"
        assert "does not exist" in (status.provider_unavailable_reason or "")
        assert "not downloaded" in (status.provider_unavailable_reason or "")
        assert manager.probe_embedding().ok is False

    def test_model_failure_falls_back_then_backs_off(
        self,
        make_manager: Make,
        workspace: Path,
        fake_qmd: Path,
        tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch,
    ) -> None:
        manager = make_manager(
            workspace, str(fake_qmd), **QUIET, search_mode="vsearch", models=_models(tmp_path)
        )
        monkeypatch.setenv("FAKE_QMD_FAULT", "model")
        monkeypatch.setenv("FAKE_QMD_FAULT_ON", "vsearch")
        assert manager.search("Zanzibar")[0].path == "memory/2026-01-02.md"
        assert [c[0] for c in commands(tmp_path)[-2:]] == ["vsearch", "search"]
        manager.search("Zanzibar")
        assert commands(tmp_path)[-1][0] == "search"  # backing off: vsearch not retried
        status = manager.status()
        assert status.search_mode == "fts-only"
        assert "vsearch failed recently" in (status.provider_unavailable_reason or "")
        manager._mode_backoff.reset()
        monkeypatch.delenv("FAKE_QMD_FAULT")
        manager.search("Zanzibar")
        assert commands(tmp_path)[-1][0] == "vsearch"
        assert manager.status().search_mode == "vector-only"

    def test_ci_gate_and_timeout_in_model_mode_fall_back(
        self,
        make_manager: Make,
        workspace: Path,
        fake_qmd: Path,
        tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch,
    ) -> None:
        manager = make_manager(
            workspace,
            str(fake_qmd),
            **QUIET,
            search_mode="query",
            models=_models(tmp_path),
            timeouts={"search": 1.0},
        )
        monkeypatch.setenv("FAKE_QMD_FAULT_ON", "query")
        for fault in ("ci", "hang"):
            manager._mode_backoff.reset()
            monkeypatch.setenv("FAKE_QMD_FAULT", fault)
            assert manager.search("Zanzibar")[0].path == "memory/2026-01-02.md"
            assert [c[0] for c in commands(tmp_path)[-2:]] == ["query", "search"]
            assert manager._mode_backoff.failures == 1

    def test_unsupported_flag_retries_as_query(
        self,
        make_manager: Make,
        workspace: Path,
        fake_qmd: Path,
        tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch,
    ) -> None:
        manager = make_manager(workspace, str(fake_qmd), **QUIET)
        script = fake_qmd.read_text().replace(
            '    if fault == "exit":',
            '    if fault == "flag":\n        die("error: unknown option \'--min-score\'")\n'
            '    if fault == "exit":',
        )
        fake_qmd.write_text(script)
        monkeypatch.setenv("FAKE_QMD_FAULT", "flag")
        monkeypatch.setenv("FAKE_QMD_FAULT_ON", "search")
        assert manager.search("Zanzibar")[0].path == "memory/2026-01-02.md"
        assert [c[0] for c in commands(tmp_path)[-2:]] == ["search", "query"]
        assert "unsupported-search-flags" in manager.status().custom["qmd"]["last_search_fallback"]


class TestCollections:
    def test_rebind_stale_and_foreign(
        self, make_manager: Make, workspace: Path, fake_qmd: Path, tmp_path: Path
    ) -> None:
        first, second = tmp_path / "first", tmp_path / "second"
        for d in (first, second, tmp_path / "foreign"):
            d.mkdir()
        manager = make_manager(
            workspace,
            str(fake_qmd),
            **QUIET,
            collections=[{"path": str(first), "name": "extra"}, {"path": str(second)}],
        )
        state = manager.state.root
        _fake(fake_qmd, state, "collection", "add", str(tmp_path / "foreign"), "--name", "theirs")
        manager.close()
        make_manager(
            workspace, str(fake_qmd), **QUIET, collections=[{"path": str(second), "name": "extra"}]
        )
        found = {name: entry.path for name, entry in manager.state.read_collections().items()}
        assert found == {
            "memory-root": str(workspace),
            "memory-dir": str(workspace / "memory"),
            "extra": str(second),  # rebound from first, taking over second's (path, pattern)
            "theirs": str(tmp_path / "foreign"),  # foreign: left alone
        }
        manifest = json.loads((state / "managed.json").read_text())
        assert manifest["collections"] == ["extra", "memory-dir", "memory-root"]

    def test_unchanged_collections_are_kept(
        self, make_manager: Make, workspace: Path, fake_qmd: Path, tmp_path: Path
    ) -> None:
        make_manager(workspace, str(fake_qmd), **QUIET).close()
        before = len(commands(tmp_path))
        make_manager(workspace, str(fake_qmd), **QUIET)
        assert [c[0] for c in commands(tmp_path)[before:]] == ["--version"]

    def test_missing_memory_dir_is_added_once_it_exists(
        self, make_manager: Make, tmp_path: Path, fake_qmd: Path
    ) -> None:
        ws = tmp_path / "ws"
        ws.mkdir()
        (ws / "MEMORY.md").write_text("# M\n\nroot fact ocelot\n")
        manager = make_manager(ws, str(fake_qmd), **QUIET)
        assert set(manager.state.read_collections()) == {"memory-root"}
        assert manager.status().custom["qmd"]["collections"][1]["present"] is False
        (ws / "memory").mkdir()
        (ws / "memory" / "day.md").write_text("# D\n\nocelot sighting\n")
        manager.sync()
        assert {r.path for r in manager.search("ocelot")} == {"MEMORY.md", "memory/day.md"}

    def test_index_corruption_is_repaired_once(
        self,
        make_manager: Make,
        workspace: Path,
        fake_qmd: Path,
        tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch,
    ) -> None:
        manager = make_manager(workspace, str(fake_qmd), **QUIET)
        monkeypatch.setenv("FAKE_QMD_FAULT", "unique")
        monkeypatch.setenv("FAKE_QMD_FAULT_ON", "update")
        monkeypatch.setenv("FAKE_QMD_FAULT_TIMES", "1")
        before = len(commands(tmp_path))
        manager.sync()
        names = [" ".join(c[:2]) for c in commands(tmp_path)[before:]]
        assert names == [
            "update",
            "collection remove",
            "collection remove",
            "collection add",
            "collection add",
            "update",
            "status",
        ]
        monkeypatch.delenv("FAKE_QMD_FAULT_TIMES")
        with pytest.raises(QmdError, match="UNIQUE constraint"):
            manager.sync()
        assert manager.status().dirty is True


class TestScheduling:
    def test_explicit_sync_runs_update_then_status(
        self, make_manager: Make, workspace: Path, fake_qmd: Path, tmp_path: Path
    ) -> None:
        manager = make_manager(workspace, str(fake_qmd), **QUIET)
        (workspace / "memory" / "new.md").write_text("# N\n\nPelicans nest by the lake.\n")
        assert manager.search("pelicans") == []
        seen: list[int] = []
        manager.sync(progress=lambda p: seen.append(p.completed))
        manager.sync()  # explicit syncs are never debounced
        assert seen == [1]
        assert [c[0] for c in commands(tmp_path)].count("update") == 2
        assert manager.search("pelicans")[0].path == "memory/new.md"
        assert manager.status().files == 9 and manager.status().last_sync_error is None

    def test_boot_and_interval_updates_are_debounced(
        self, make_manager: Make, workspace: Path, fake_qmd: Path, tmp_path: Path
    ) -> None:
        manager = make_manager(
            workspace,
            str(fake_qmd),
            update_interval_minutes=0.004,  # the timer ticks every 0.24 s
            debounce_seconds=0.6,
        )

        def update_times() -> list[float]:
            return [e["time"] for e in read_log(tmp_path) if e["argv"][0] == "update"]

        deadline = time.monotonic() + 15
        while len(update_times()) < 3 and time.monotonic() < deadline:
            time.sleep(0.05)
        manager.close()
        times = update_times()
        assert len(times) >= 3  # the boot update, then timer updates
        gaps = [b - a for a, b in itertools.pairwise(times)]
        assert min(gaps) >= 0.6  # ticks within the debounce window were skipped

    def test_wait_for_boot_sync(
        self, make_manager: Make, workspace: Path, fake_qmd: Path, tmp_path: Path
    ) -> None:
        make_manager(workspace, str(fake_qmd), wait_for_boot_sync=True, update_interval_minutes=0)
        assert [c[0] for c in commands(tmp_path)][-2:] == ["update", "status"]

    def test_embed_schedule_backoff_and_skip(
        self,
        make_manager: Make,
        workspace: Path,
        fake_qmd: Path,
        tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch,
    ) -> None:
        manager = make_manager(
            workspace, str(fake_qmd), **QUIET, search_mode="vsearch", models=_models(tmp_path)
        )

        def embeds() -> int:
            return [c[0] for c in commands(tmp_path)].count("embed")

        manager.sync()
        assert embeds() == 1 and manager.probe_vector().ok
        manager.sync()
        assert embeds() == 1  # not due for another 60 minutes
        manager.sync(force=True)
        assert embeds() == 2
        status = manager.status()
        assert status.vectors == status.files == 8 and status.integrity_ok

        monkeypatch.setenv("FAKE_QMD_FAULT", "crash")
        monkeypatch.setenv("FAKE_QMD_FAULT_ON", "embed")
        manager._last_embed_mono = None
        manager.sync()  # an embed failure is reported, never raised
        assert embeds() == 3
        status = manager.status()
        assert "embed:" in (status.last_sync_error or "")
        assert status.custom["qmd"]["embed_backoff"]["failures"] == 1
        manager.sync()
        assert embeds() == 3  # in backoff

        script = fake_qmd.read_text().replace(
            'print("✓ Done!")',
            'print("Another embed process is already running. Skipping.")',
        )
        fake_qmd.write_text(script)
        monkeypatch.delenv("FAKE_QMD_FAULT")
        manager.sync(force=True)
        assert embeds() == 4
        assert manager.status().custom["qmd"]["last_embed_at"] is not None
        assert manager._last_embed_mono is None  # a skipped embed is not an embed

    def test_search_mode_search_never_embeds(
        self, make_manager: Make, workspace: Path, fake_qmd: Path, tmp_path: Path
    ) -> None:
        manager = make_manager(workspace, str(fake_qmd), **QUIET, models=_models(tmp_path))
        manager.sync(force=True)
        assert "embed" not in [c[0] for c in commands(tmp_path)]
        assert manager.status().vectors is None

    def test_models_are_pinned_in_index_yml(
        self, make_manager: Make, workspace: Path, fake_qmd: Path, tmp_path: Path
    ) -> None:
        models = _models(tmp_path)
        manager = make_manager(workspace, str(fake_qmd), **QUIET, models=models)
        data = yaml.safe_load(manager.state.index_yml.read_text())
        assert data["models"] == models
        assert read_log(tmp_path)[0]["env"]["HOME"].endswith("home")
        manager.close()
        manager = make_manager(workspace, str(fake_qmd), **QUIET, models={"embed": models["embed"]})
        data = yaml.safe_load(manager.state.index_yml.read_text())
        assert data["models"] == {"embed": models["embed"]}


class TestProcesses:
    def test_timeout_kills_the_whole_process_group(
        self,
        make_manager: Make,
        workspace: Path,
        fake_qmd: Path,
        tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch,
    ) -> None:
        manager = make_manager(workspace, str(fake_qmd), **QUIET, timeouts={"search": 0.5})
        pids = tmp_path / "pids"
        monkeypatch.setenv("FAKE_QMD_FAULT", "hang")
        monkeypatch.setenv("FAKE_QMD_PIDS", str(pids))
        started = time.monotonic()
        with pytest.raises(QmdTimeout, match=r"timed out after 0\.5s"):
            manager.search("Zanzibar")
        assert time.monotonic() - started < 5
        leader, child = map(int, pids.read_text().split())
        # SIGKILL went to the whole group; the child (reparented) dies asynchronously
        assert _gone(leader) and _gone(child)
        assert qmd_processes(tmp_path) == []
        assert manager.runner.active_pids == []

    def test_close_kills_running_calls(
        self,
        make_manager: Make,
        workspace: Path,
        fake_qmd: Path,
        tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch,
    ) -> None:
        manager = make_manager(workspace, str(fake_qmd), **QUIET, timeouts={"search": 60})
        monkeypatch.setenv("FAKE_QMD_FAULT", "hang")
        errors: list[BaseException] = []

        def run() -> None:
            try:
                manager.search("Zanzibar")
            except BaseException as exc:
                errors.append(exc)

        thread = threading.Thread(target=run)
        thread.start()
        deadline = time.monotonic() + 10
        while not manager.runner.active_pids and time.monotonic() < deadline:
            time.sleep(0.02)
        time.sleep(0.3)
        started = time.monotonic()
        manager.close()
        thread.join(10)
        assert time.monotonic() - started < 5
        assert len(errors) == 1 and "closed" in str(errors[0])
        assert qmd_processes(tmp_path) == []
        with pytest.raises(BackendUnavailableError):
            manager.search("Zanzibar")
        manager.close()  # idempotent
