"""``memwell search --stdin``, ``memwell warm``, ``memwell compress`` and the recall cache in
``memwell status``."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner
from memwell import factory
from memwell.cli.main import cli
from memwell.testing.conformance import write_workspace


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


def invoke(ws: Path, *args: str, stdin: str | None = None) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, ["--provider", "none", "-w", str(ws), *args], input=stdin)
    return result.exit_code, result.stdout, result.stderr


def test_search_stdin_prints_one_json_line_per_query(ws: Path) -> None:
    code, out, _ = invoke(
        ws, "search", "--stdin", "-n", "3", stdin="Zanzibar codename\n\n tomatoes \n"
    )
    assert code == 0, out
    records = [json.loads(line) for line in out.splitlines()]
    assert [r["query"] for r in records] == ["Zanzibar codename", "tomatoes"]
    for record in records:
        code, single, _ = invoke(ws, "search", record["query"], "-n", "3", "--json")
        assert json.loads(single)["results"] == record["results"]
    assert records[0]["results"][0]["path"] == "memory/2026-01-02.md"


def test_search_needs_exactly_one_query_source(ws: Path) -> None:
    assert invoke(ws, "search")[0] == 2
    assert invoke(ws, "search", "x", "--stdin", stdin="y\n")[0] == 2


def test_status_reports_the_recall_cache(ws: Path) -> None:
    code, out, _ = invoke(ws, "status")
    assert code == 0 and "recall cache: on; hits/misses exact 0/0" in out
    assert "semantic off (the backend has no query embedder" in out
    code, out, _ = invoke(ws, "status", "--json")
    cache = json.loads(out)["recall_cache"]
    assert cache["enabled"] and cache["max_entries"] == 1000 and cache["semantic"] is None


def test_warm(ws: Path) -> None:
    code, out, _ = invoke(ws, "warm")
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
    code, out, _ = invoke(ws, "compress", str(transcript), "--budget", "180", "--json")
    assert code == 0, out
    data = json.loads(out)
    assert data["level"] == "light" and data["fits"] and data["dropped_turns"] == 1
    assert data["tokenizer"].startswith("estimate")
    assert data["turns"][0] == {"role": "user", "content": "Let's use Postgres 16."}
    code, out, err = invoke(ws, "compress", str(transcript), "--budget", "50")
    assert code == 0 and "level heavy" in err and '"decisions": ["Let\'s use Postgres 16."]' in out
    empty = tmp_path / "empty.jsonl"
    empty.write_text("not json\n")
    assert invoke(ws, "compress", str(empty), "--budget", "10")[0] == 2
