"""``memwell session save`` and ``memwell flush-plan`` as a user runs them (new processes)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
from memwell.retrieval.decay import decay_multiplier
from memwell.testing.conformance import write_workspace

MEMWELL = str(Path(sys.executable).with_name("memwell"))
AGE_DAYS = 30


def run(tmp_path: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("MEMWELL_")}
    clean.update(
        {"XDG_CONFIG_HOME": str(tmp_path / "xdg"), "MEMWELL_LOAD_PLUGINS": "builtin", **env}
    )
    return subprocess.run(
        [MEMWELL, *args], capture_output=True, text=True, env=clean, cwd=tmp_path, timeout=120
    )


def sample_transcript(path: Path, ended: datetime) -> Path:
    start = ended - timedelta(minutes=3)
    talk = [
        ("user", "How should the Quokka importer handle duplicate invoices?"),
        ("assistant", "Deduplicate Quokka invoices by vendor and invoice number."),
        ("user", "Agreed. Keep the first Quokka invoice and log the duplicates."),
    ]
    lines = [json.dumps({"type": "session", "id": "sample-1", "timestamp": start.isoformat()})]
    for index, (role, text) in enumerate(talk):
        moment = ended if index == len(talk) - 1 else start + timedelta(minutes=index)
        message = {"role": role, "content": [{"type": "text", "text": text}]}
        record = {"type": "message", "timestamp": moment.isoformat(), "message": message}
        lines.append(json.dumps(record))
    lines.insert(2, '{"type": "message", "message": ')  # a torn line
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def top_score(tmp_path: Path, ws: Path, **env: str) -> tuple[str, float]:
    proc = run(
        tmp_path,
        *("-w", str(ws), "--provider", "none", "search", "Quokka duplicate invoices"),
        *("--json", "--min-score", "0"),
        **env,
    )
    assert proc.returncode == 0, proc.stderr
    data: Any = json.loads(proc.stdout)
    hits = data["results"] if isinstance(data, dict) else data
    return hits[0]["path"], float(hits[0]["score"])


def test_session_save_writes_the_dated_note_and_it_decays_by_its_date(tmp_path: Path) -> None:
    ws = write_workspace(tmp_path / "ws")
    ended = (datetime.now(timezone.utc) - timedelta(days=AGE_DAYS)).replace(microsecond=0)
    transcript = sample_transcript(tmp_path / "sample.jsonl", ended)

    proc = run(
        tmp_path,
        *("-w", str(ws), "--provider", "none", "session", "save", str(transcript)),
        *("--session-key", "agent:main:main", "--json"),
    )
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout)
    day = ended.date().isoformat()
    assert result["path"] == f"memory/{day}-quokka-invoices-duplicate.md"
    assert result["skipped_lines"] == 1 and result["indexed"] is True
    assert "skipped 1 malformed line" in proc.stderr
    assert (ws / result["path"]).read_text(encoding="utf-8") == (
        f"# Session: {ended:%Y-%m-%d %H:%M:%S} UTC\n\n"
        "- **Session Key**: agent:main:main\n"
        "- **Session ID**: sample-1\n"
        "- **Source**: cli\n\n"
        "## Conversation Summary\n\n"
        "user: How should the Quokka importer handle duplicate invoices?\n"
        "assistant: Deduplicate Quokka invoices by vendor and invoice number.\n"
        "user: Agreed. Keep the first Quokka invoice and log the duplicates.\n"
    )

    # The file was written just now, but it dates from its name: 30 days, one half-life.
    path, plain = top_score(tmp_path, ws)
    decay_env = {
        "MEMWELL_QUERY__HYBRID__TEMPORAL_DECAY__ENABLED": "true",
        "MEMWELL_QUERY__HYBRID__TEMPORAL_DECAY__HALF_LIFE_DAYS": "30",
    }
    decayed_path, decayed = top_score(tmp_path, ws, **decay_env)
    assert path == decayed_path == result["path"]
    midnight = datetime.combine(ended.date(), datetime.min.time(), tzinfo=timezone.utc)
    age = (datetime.now(timezone.utc) - midnight).total_seconds() / 86_400
    assert decayed == pytest.approx(plain * decay_multiplier(age, 30), rel=0.01)
    assert decayed < 0.55 * plain


def test_session_save_mistakes_are_one_error_line(tmp_path: Path) -> None:
    ws = write_workspace(tmp_path / "ws")
    empty = tmp_path / "empty.jsonl"
    empty.write_text("not json\n", encoding="utf-8")
    for target, message in (
        (tmp_path / "missing.jsonl", "cannot read transcript"),
        (empty, "no user or assistant messages to save (1 malformed line skipped)"),
    ):
        proc = run(tmp_path, "-w", str(ws), "--provider", "none", "session", "save", str(target))
        assert proc.returncode == 2, proc.stderr
        assert proc.stderr.startswith("error:") and message in proc.stderr
        assert "Traceback" not in proc.stderr


def test_flush_plan_once_per_compaction_cycle_across_processes(tmp_path: Path) -> None:
    ws = write_workspace(tmp_path / "ws")
    usage = ("--context-window", "128000", "--session-key", "s1", "--json")

    def plan(tokens: int, cycle: str) -> dict[str, Any]:
        proc = run(
            tmp_path,
            *("-w", str(ws), "flush-plan", "--tokens-used", str(tokens)),
            *("--compaction-count", cycle, *usage),
        )
        assert proc.returncode == 0, proc.stderr
        data: dict[str, Any] = json.loads(proc.stdout)
        return data

    below = plan(103_999, "0")
    assert below["flush"] is False and below["threshold_tokens"] == 104_000
    first = plan(104_000, "0")
    assert first["flush"] is True
    assert first["target"] == f"memory/{datetime.now().astimezone():%Y-%m-%d}.md"
    assert first["target"] in first["prompt"] and "NO_REPLY" in first["prompt"]
    again = plan(120_000, "0")
    assert again["flush"] is False and "already flushed in compaction cycle 0" in again["reason"]
    assert plan(110_000, "1")["flush"] is True
