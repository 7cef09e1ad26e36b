"""Pure unit tests of the qmd bridge: parsing, error mapping, naming, models, config, state."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import yaml
from memwell.contract.config import load_settings
from memwell.contract.errors import ConfigError
from memwell.registry.plugins import PluginRegistry
from memwell_qmd.collections import desired_collections, sanitize_name
from memwell_qmd.config import QmdCollection, QmdConfig
from memwell_qmd.errors import (
    QmdBusy,
    QmdCollectionConflict,
    QmdCollectionMissing,
    QmdCommandError,
    QmdConfigError,
    QmdError,
    QmdIndexCorrupt,
    QmdModelUnavailable,
    QmdOutputError,
    QmdRuntimeBroken,
    QmdUnsupportedFlag,
    classify_failure,
)
from memwell_qmd.manager import Backoff, rescue_keywords
from memwell_qmd.modelfiles import DEFAULT_MODELS, missing_models, model_problem, resolve_model
from memwell_qmd.parsing import (
    parse_search_output,
    parse_status,
    parse_uri,
    parse_version,
    split_snippet,
)
from memwell_qmd.state import QmdState, find_local_qmd_config

# Captured from qmd 2.8.3 (see shared/reference/qmd.md section 5).
REAL_SEARCH = """[
  {
    "docid": "#696c7c",
    "score": 0.55,
    "file": "qmd://notes/beta.md",
    "line": 3,
    "title": "Beta Guide",
    "snippet": "@@ -2,4 @@ (1 before, 2 after)\\n\\nAuthentication flow uses OAuth tokens.\\nRefresh tokens expire after 30 days.\\n"
  }
]"""  # noqa: E501

REAL_STATUS = """QMD Status

Index: /s/cache/qmd/index.sqlite
Size:  264.0 KB

Documents
  Total:    5 files indexed
  Vectors:  3 embedded
  Pending:  2 need embedding (run 'qmd embed')
  Updated:  6m ago

AST Chunking
  Status:   active

Collections
  memory-root (qmd://memory-root/)
    Pattern:  {MEMORY.md,memory.md}
    Files:    1 (updated 3s ago)
  memory-dir (qmd://memory-dir/)
    Pattern:  **/*.md
    Files:    4 (updated 3s ago)

Models
  Embedding:   /m/tiny-embed.gguf
  Reranking:   /m/tiny-rerank.gguf
"""


class TestSearchOutput:
    def test_clean_json(self) -> None:
        [hit] = parse_search_output(REAL_SEARCH)
        assert (hit.collection, hit.rel_path, hit.docid) == ("notes", "beta.md", "696c7c")
        assert hit.score == 0.55
        # header says lines 2..5; the blank first and last lines are trimmed away
        assert (hit.start_line, hit.end_line) == (3, 4)
        assert hit.snippet.splitlines()[0] == "Authentication flow uses OAuth tokens."

    def test_noisy_stdout_takes_first_balanced_array(self) -> None:
        noisy = "ggml_cuda_init: failed [no device] (x)\n[warn] llama [1, 2]\n" + REAL_SEARCH
        [hit] = parse_search_output(noisy + "\ntrailing noise [")
        assert hit.rel_path == "beta.md"

    @pytest.mark.parametrize(
        ("stdout", "stderr"),
        [
            ("No results found.", ""),
            ("No results found above minimum score threshold.", ""),
            ("[qmd] warn: no results found\n", ""),
            ("", "qmd: No results found."),
            ("[]", ""),
            ("  []\n", "Warning: 3 documents (100%) need embeddings"),
        ],
    )
    def test_no_results(self, stdout: str, stderr: str) -> None:
        assert parse_search_output(stdout, stderr) == []

    @pytest.mark.parametrize(
        "stdout",
        ["", "   \n", "Searching 2 queries...", "[{not json", "no results found in this text? no"],
    )
    def test_invalid_output_raises(self, stdout: str) -> None:
        with pytest.raises(QmdOutputError):
            parse_search_output(stdout)

    def test_malformed_items_skipped_but_all_bad_is_an_error(self) -> None:
        good = '{"file": "qmd://c/a.md", "score": 0.5, "snippet": "x", "line": 2}'
        hits = parse_search_output(f'[{{"score": "high"}}, {good}, {{"file": 3}}]')
        assert [h.rel_path for h in hits] == ["a.md"]
        assert (hits[0].start_line, hits[0].end_line) == (2, 2)
        with pytest.raises(QmdOutputError):
            parse_search_output('[{"score": 1}, {"file": "not-a-uri", "score": 1}]')

    def test_explicit_lines_win_and_reversed_are_swapped(self) -> None:
        [hit] = parse_search_output(
            '[{"file": "qmd://c/a.md", "score": 1, "start_line": 9, "end_line": 4,'
            ' "snippet": "@@ -1,2 @@\\na\\nb"}]'
        )
        assert (hit.start_line, hit.end_line) == (4, 9)

    def test_docid_only_hit_and_non_finite_score(self) -> None:
        [hit] = parse_search_output('[{"docid": "#abcdef", "score": NaN, "snippet": "s"}]')
        assert hit.docid == "abcdef" and hit.rel_path is None and hit.score == 0.0


class TestSnippets:
    def test_truncated_snippet_keeps_header_range(self) -> None:
        start, end, text = split_snippet("@@ -7,4 @@ (6 before, 0 after)\nThe zebra...", None)
        assert (start, end, text) == (7, 10, "The zebra...")

    def test_snippet_without_trailing_blank(self) -> None:
        start, end, text = split_snippet("@@ -1,3 @@ (0 before, 1 after)\n# Sub\n\nkiwi", 3)
        assert (start, end) == (1, 3) and text == "# Sub\n\nkiwi"

    def test_no_header_uses_best_line_then_line_count(self) -> None:
        assert split_snippet("one\ntwo", 5)[:2] == (5, 5)
        assert split_snippet("one\ntwo\nthree", None)[:2] == (1, 3)


def test_parse_uri() -> None:
    assert parse_uri("qmd://notes/sub/My Notes.md") == ("notes", "sub/My Notes.md")
    assert parse_uri("qmd://d3/plain.md?index=bridge") == ("d3", "plain.md")
    assert parse_uri("./docs/plain.md") is None


def test_parse_status_and_version() -> None:
    info = parse_status(REAL_STATUS)
    assert (info.total, info.vectors, info.pending) == (5, 3, 2)
    assert info.index_path == "/s/cache/qmd/index.sqlite"
    assert info.collection_files == {"memory-root": 1, "memory-dir": 4}
    assert info.models == {"embed": "/m/tiny-embed.gguf", "rerank": "/m/tiny-rerank.gguf"}
    assert parse_status("QMD Status\n\nDocuments\n  Total:    0 files indexed\n").total == 0
    assert parse_version("qmd 2.8.3 (facd35e)\n") == (2, 8, 3)
    assert parse_version("v22.23.3") is None


@pytest.mark.parametrize(
    ("rc", "stderr", "expected"),
    [
        (139, "", QmdRuntimeBroken),
        (-11, "", QmdRuntimeBroken),
        (1, "Error: LLM operations are disabled in CI (set CI=true)", QmdConfigError),
        (1, 'Error: No model file found at "/x.gguf"', QmdModelUnavailable),
        (1, "SqliteError: database is locked", QmdBusy),
        (1, "UNIQUE constraint failed: documents.collection, documents.path", QmdIndexCorrupt),
        (1, "Collection not found: memory-dir\nRun 'qmd collection list'", QmdCollectionMissing),
        (1, "Collection 'x' already exists.", QmdCollectionConflict),
        (1, "A collection already exists for this path and pattern: y", QmdCollectionConflict),
        (1, "error: unknown option '--min-score'", QmdUnsupportedFlag),
        (3, "something else", QmdCommandError),
    ],
)
def test_classify_failure(rc: int, stderr: str, expected: type[QmdError]) -> None:
    error = classify_failure(["search", "--json"], rc, "", stderr)
    assert type(error) is expected
    assert error.returncode == rc
    assert "qmd search --json" in str(error)


class TestCollections:
    def test_defaults_and_extras(self, tmp_path: Path) -> None:
        ws = tmp_path / "ws"
        (ws / "docs").mkdir(parents=True)
        (ws / "docs" / "todo.md").write_text("x")
        outside = tmp_path / "Team Notes"
        outside.mkdir()
        specs = desired_collections(
            ws,
            [
                QmdCollection(path="docs", pattern="*.md"),
                QmdCollection(path=str(outside), name="Team Notes!"),
                QmdCollection(path="docs", pattern="*.md", name="dup"),  # same target: dropped
            ],
            ["docs/todo.md", "missing-dir"],
            include_default_memory=True,
        )
        got = [(s.name, s.root, s.pattern, s.scope) for s in specs]
        assert got == [
            ("memory-root", ws, "{MEMORY.md,memory.md}", ws),
            ("memory-dir", ws / "memory", "**/*.md", ws / "memory"),
            ("docs", ws / "docs", "*.md", ws / "docs"),
            ("team-notes", outside, "**/*.md", outside),
            ("todo", ws / "docs", "todo.md", ws / "docs" / "todo.md"),
            ("missing-dir", ws / "missing-dir", "**/*.md", ws / "missing-dir"),
        ]

    def test_names_are_unique_and_sanitised(self, tmp_path: Path) -> None:
        for sub in ("a/memory", "b/memory"):
            (tmp_path / sub).mkdir(parents=True)
        specs = desired_collections(
            tmp_path,
            [QmdCollection(path="a/memory", name="memory-dir"), QmdCollection(path="b/memory")],
            [],
            include_default_memory=True,
        )
        assert [s.name for s in specs] == ["memory-root", "memory-dir", "memory-dir-2", "memory"]
        assert sanitize_name("  ÜBER notes__2024 ") == "ber-notes-2024"
        assert sanitize_name("***") == "collection"

    def test_no_default_memory(self, tmp_path: Path) -> None:
        assert desired_collections(tmp_path, [], [], include_default_memory=False) == []


def test_rescue_keywords() -> None:
    assert rescue_keywords("What is the port of the staging database?") == [
        "port",
        "staging",
        "database",
    ]
    assert rescue_keywords("a an 42 ok Zanzibar zanzibar") == ["zanzibar"]
    assert rescue_keywords("部署 环境") == ["部署", "环境"]
    assert len(rescue_keywords(" ".join(f"word{i}" for i in range(20)))) == 8


class TestModels:
    def test_local_paths(self, tmp_path: Path) -> None:
        model = tmp_path / "m.gguf"
        assert resolve_model("m.gguf", tmp_path) == str(model)
        assert model_problem(str(model), tmp_path, False) is not None
        model.write_bytes(b"GGUF")
        assert model_problem(str(model), tmp_path, False) is None

    def test_hf_models_need_a_cached_file_or_downloads(self, tmp_path: Path) -> None:
        uri = DEFAULT_MODELS["embed"]
        assert resolve_model(uri, tmp_path) == uri
        assert "not downloaded" in (model_problem(uri, tmp_path, False) or "")
        assert model_problem(uri, tmp_path, True) is None
        (tmp_path / "hf_ggml-org_embeddinggemma-300M-Q8_0.gguf").write_bytes(b"")
        assert model_problem(uri, tmp_path, False) is None
        assert model_problem("https://example.invalid/x.gguf", tmp_path, False) is not None

    def test_missing_models_per_command(self, tmp_path: Path) -> None:
        models = dict(DEFAULT_MODELS)
        assert missing_models("search", models, tmp_path, False) == {}
        assert set(missing_models("vsearch", models, tmp_path, False)) == {"embed", "generate"}
        assert set(missing_models("query", models, tmp_path, False)) == set(models)


class TestConfig:
    def test_defaults(self, monkeypatch: pytest.MonkeyPatch) -> None:
        monkeypatch.delenv("MEMWELL_QMD_COMMAND", raising=False)
        config = QmdConfig()
        assert config.argv == ["qmd"]
        assert config.search_mode == "search"
        t = config.timeouts
        assert (t.search, t.collection, t.update, t.embed) == (4.0, 30.0, 120.0, 120.0)
        assert (config.update_interval_minutes, config.embed_interval_minutes) == (5.0, 60.0)
        assert (config.debounce_seconds, config.max_snippet_chars) == (15.0, 700)

    def test_command_from_env_and_forms(self, monkeypatch: pytest.MonkeyPatch) -> None:
        monkeypatch.setenv("MEMWELL_QMD_COMMAND", "'/opt/my node/node' /q/qmd.js")
        assert QmdConfig().argv == ["/opt/my node/node", "/q/qmd.js"]
        assert QmdConfig(command=["node", "", "qmd.js"]).argv == ["node", "qmd.js"]
        with pytest.raises(ValueError, match=r"command.*must not be empty"):
            QmdConfig(command="  ")
        with pytest.raises(ValueError, match=r"command.*quotation"):
            QmdConfig.model_validate({"command": "'unbalanced"})

    def test_unknown_and_bad_keys_are_named(self, tmp_path: Path) -> None:
        registry = PluginRegistry(load_entry_points=False)
        import memwell_qmd.plugin

        registry.register(memwell_qmd.plugin, "qmd")
        bad = {"backends": {"qmd": {"search_mod": "query"}}}
        with pytest.raises(ConfigError, match=r"backends\.qmd\.search_mod"):
            load_settings(tmp_path, overrides=bad, environ={}, registry=registry)
        bad = {"backends": {"qmd": {"search_mode": "fuzzy"}}}
        with pytest.raises(ConfigError, match=r"backends\.qmd\.search_mode"):
            load_settings(tmp_path, overrides=bad, environ={}, registry=registry)


def test_backoff_doubles_and_caps() -> None:
    now = [100.0]
    backoff = Backoff(base=60, cap=200, clock=lambda: now[0])
    assert not backoff.active()
    delays = []
    for _ in range(4):
        backoff.fail("boom")
        delays.append(backoff.until - now[0])
    assert delays == [60, 120, 200, 200]
    assert backoff.active() and backoff.snapshot()["failures"] == 4
    now[0] += 201
    assert not backoff.active()
    backoff.reset()
    assert backoff.failures == 0 and backoff.last_error is None


class TestState:
    def test_pin_models_keeps_collections_and_drops_old_pins(self, tmp_path: Path) -> None:
        state = QmdState(tmp_path)
        state.config_dir.mkdir(parents=True)
        state.index_yml.write_text(
            'collections:\n  notes:\n    path: /n\n    pattern: "**/*.md"\n'
            "models:\n  embed: hf:default/embed.gguf\n  rerank: /old/rerank.gguf\n"
        )
        state.pin_models({"generate": "/new/gen.gguf"}, previously_pinned={"rerank"})
        data = yaml.safe_load(state.index_yml.read_text())
        assert data["collections"] == {"notes": {"path": "/n", "pattern": "**/*.md"}}
        assert data["models"] == {"embed": "hf:default/embed.gguf", "generate": "/new/gen.gguf"}
        assert state.read_collections()["notes"].pattern == "**/*.md"

    def test_unreadable_config_is_a_config_error(self, tmp_path: Path) -> None:
        state = QmdState(tmp_path)
        state.config_dir.mkdir(parents=True)
        state.index_yml.write_text("collections: [unclosed")
        with pytest.raises(QmdConfigError):
            state.read_collections()

    def test_working_dir_avoids_project_local_qmd_config(self, tmp_path: Path) -> None:
        (tmp_path / ".qmd").mkdir()
        (tmp_path / ".qmd" / "index.yml").write_text("collections: {}\n")
        state = QmdState(tmp_path / "ws" / ".memwell" / "qmd")
        state.prepare(None)
        assert find_local_qmd_config(state.run_dir) == tmp_path / ".qmd" / "index.yml"
        assert state.working_dir() == Path("/")
        os.remove(tmp_path / ".qmd" / "index.yml")
        assert state.working_dir() == state.run_dir

    def test_shared_models_are_linked(self, tmp_path: Path) -> None:
        shared = tmp_path / "shared"
        shared.mkdir()
        state = QmdState(tmp_path / "state")
        state.prepare(shared)
        assert state.models_dir.is_symlink() and state.models_dir.resolve() == shared
