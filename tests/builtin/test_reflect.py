"""``memwell reflect`` on the builtin backend: entity pages, procedures, decay scores, the log,
idempotence, user text kept, and the pages found by search."""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import datetime, timezone
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import Scripted, textgen_plugin
from memwell.cli.main import cli
from memwell.contract.config import MemwellSettings
from memwell.contract.manager import MemorySearchManager
from memwell.organise import reflect
from memwell.organise.pages import END
from memwell.writing import MemoryWriter

OpenFn = Callable[..., MemorySearchManager]
NOW = datetime(2026, 12, 4, 9, 0, tzinfo=timezone.utc)

NOTES = {
    "memory/2026-11-01.md": (
        "# 2026-11-01\n"
        "\n"
        "- Met with Ines Duarte about the migration.\n"
        "- Ines Duarte works on Atlas and prefers PostgreSQL for storage.\n"
        "\n"
        "## How to deploy the API\n"
        "\n"
        "1. Run `make build` on the release branch.\n"
        "2. Push the image to the registry.\n"
        "3. Restart the api service.\n"
        "\n"
        "Deploys go out on Tuesdays.\n"
    ),
    "memory/2026-11-02.md": (
        "# 2026-11-02\n"
        "\n"
        "Ines Duarte leads Atlas now. The Atlas service uses PostgreSQL.\n"
        "- Ines Duarte lives in Lisbon, near Porto. *(superseded 2026-11-03 by "
        "memory/2026-11-03.md#L3)*\n"
        "Deploys are frozen this week.\n"
    ),
    "memory/2026-11-03.md": (
        "# 2026-11-03\n"
        "\n"
        "Ines Duarte lives in Porto now.\n"
        "\n"
        "Steps to rotate the signing keys:\n"
        "1. Open the key store.\n"
        "2. Generate a new key and publish it.\n"
        "\n"
        "Shopping list:\n"
        "1. Milk\n"
        "2. Bread\n"
    ),
    "memory/vault/house-rules.md": "Never deploy on Fridays.\n",
}


@pytest.fixture
def org(tmp_path: Path) -> Path:
    ws = tmp_path / "org"
    for rel, text in NOTES.items():
        (ws / rel).parent.mkdir(parents=True, exist_ok=True)
        (ws / rel).write_text(text)
    return ws


@pytest.fixture
def memory(open_ws: OpenFn, org: Path) -> MemorySearchManager:
    manager = open_ws(org, provider="none")
    manager.sync(reason="test")
    return manager


@pytest.fixture
def writer(memory: MemorySearchManager, org: Path) -> MemoryWriter:
    return MemoryWriter(memory, org, MemwellSettings(), clock=lambda: NOW)


def tree(ws: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(ws)): p.read_bytes()
        for p in sorted((ws / "memory").rglob("*"))
        if p.is_file()
    }


def test_entity_pages_cite_their_sources_and_show_superseded_facts(
    writer: MemoryWriter, org: Path
) -> None:
    result = reflect(writer, clock=lambda: NOW)
    entities = org / "memory/graph/entities"
    assert sorted(p.name for p in entities.iterdir()) == [
        "atlas.md",
        "ines-duarte.md",
        "porto.md",
        "postgresql.md",
    ]
    assert result.entities == 4 and result.superseded == 2  # Ines's and Porto's page
    page = (entities / "ines-duarte.md").read_text()
    assert page.startswith(
        "---\ngenerated: memwell reflect\nkind: entity\nname: Ines Duarte\ntype: person\n---\n"
    )
    facts = page.split("## Facts\n\n")[1].split("\n\n")[0].splitlines()
    assert facts == [  # newest note first, each citing path#line
        "- Ines Duarte lives in Porto now. (memory/2026-11-03.md#L3)",
        "- Ines Duarte leads Atlas now. The Atlas service uses PostgreSQL. "
        "(memory/2026-11-02.md#L3)",
        "- Met with Ines Duarte about the migration. (memory/2026-11-01.md#L3)",
        "- Ines Duarte works on Atlas and prefers PostgreSQL for storage. "
        "(memory/2026-11-01.md#L4)",
    ]
    assert (
        "## Superseded\n\n- superseded: Ines Duarte lives in Lisbon, near Porto. *(superseded "
        "2026-11-03 by memory/2026-11-03.md#L3)* (memory/2026-11-02.md#L4)\n"
    ) in page
    assert "- leads → [Atlas](atlas.md) (memory/2026-11-02.md#L3)" in page
    assert "- works_on → [Atlas](atlas.md) (memory/2026-11-01.md#L4)" in page
    atlas = (entities / "atlas.md").read_text()
    assert "- leads ← [Ines Duarte](ines-duarte.md) (memory/2026-11-02.md#L3)" in atlas
    assert "type: place" in (entities / "porto.md").read_text()
    # words that open sentences ("Deploys", "Steps", "Run") and weekdays are no entities
    index = (org / "memory/graph/index.md").read_text()
    assert "| [Ines Duarte](entities/ines-duarte.md) | person | 3 | 5 |" in index
    assert "Deploys" not in index and "Tuesdays" not in index
    assert "[Ines Duarte](entities/ines-duarte.md) —leads→ [Atlas](entities/atlas.md) (1)" in index
    relations = (org / "memory/graph/relations.md").read_text()
    assert "| leads | leads, owns, runs or manages | 1 |" in relations


def test_procedures_keep_the_steps_verbatim_with_the_source(
    writer: MemoryWriter, org: Path
) -> None:
    reflect(writer, clock=lambda: NOW)
    procedures = org / "memory/procedures"
    assert sorted(p.name for p in procedures.iterdir()) == [
        "how-to-deploy-the-api.md",
        "steps-to-rotate-the-signing.md",  # slugs are cut at 30 characters
    ]  # the shopping list announces no steps
    page = (procedures / "how-to-deploy-the-api.md").read_text()
    body = page.split("-->\n", 1)[1].split("\n<!--", 1)[0]
    assert body == (
        "# How to deploy the API\n\n"
        "Source: memory/2026-11-01.md#L6-L10\n\n"
        "1. Run `make build` on the release branch.\n"
        "2. Push the image to the registry.\n"
        "3. Restart the api service."
    )
    keys = (procedures / "steps-to-rotate-the-signing.md").read_text()
    assert "Source: memory/2026-11-03.md#L5-L7\n" in keys


def test_a_second_run_on_unchanged_memory_is_byte_identical(
    writer: MemoryWriter, org: Path
) -> None:
    first = reflect(writer, clock=lambda: NOW)
    assert first.changed_anything and "memory/graph/index.md" in first.added
    before = tree(org)
    later = datetime(2026, 12, 4, 18, 0, tzinfo=timezone.utc)  # same day, other hour
    second = reflect(writer, clock=lambda: later)
    assert not second.changed_anything and second.added == second.changed == []
    assert tree(org) == before  # pages, log, scores and audit log alike
    log = (org / "memory/meta/reflection-log.md").read_text()
    assert log.count("\n## ") == 1 and "- added (8): " in log


def test_text_a_user_adds_to_a_generated_page_is_kept(writer: MemoryWriter, org: Path) -> None:
    reflect(writer, clock=lambda: NOW)
    page = org / "memory/graph/entities/atlas.md"
    mine = "\n## My notes\n\nAtlas Prime is the codename — ask before sharing.\n"
    page.write_text(page.read_text() + mine)
    (org / "memory/2026-11-04.md").write_text("Atlas ships on the 9th.\n")
    result = reflect(writer, clock=lambda: NOW)
    assert "memory/graph/entities/atlas.md" in result.changed
    text = page.read_text()
    assert text.endswith(END + "\n" + mine)
    assert "- Atlas ships on the 9th. (memory/2026-11-04.md#L1)" in text
    # the user's paragraph in a generated page is never evidence: no "Atlas Prime" entity
    assert "Atlas Prime" not in (org / "memory/graph/index.md").read_text()
    log = (org / "memory/meta/reflection-log.md").read_text()
    assert log.count("\n## ") == 2 and "- changed (" in log


def test_a_page_without_its_markers_is_left_alone(writer: MemoryWriter, org: Path) -> None:
    reflect(writer, clock=lambda: NOW)
    page = org / "memory/graph/entities/porto.md"
    page.write_text("---\ngenerated: memwell reflect\n---\n# Porto, my way\n")
    (org / "memory/2026-11-05.md").write_text("Flew to Porto again.\n")
    result = reflect(writer, clock=lambda: NOW)
    assert result.left_alone == ["memory/graph/entities/porto.md"]
    assert page.read_text() == "---\ngenerated: memwell reflect\n---\n# Porto, my way\n"


def test_a_vanished_entity_page_is_retired_not_deleted(writer: MemoryWriter, org: Path) -> None:
    reflect(writer, clock=lambda: NOW)
    (org / "memory/2026-11-03.md").write_text("Nothing about that city.\n")
    result = reflect(writer, clock=lambda: NOW)
    assert result.retired == [  # the how-to of that note went with it
        "memory/graph/entities/porto.md",
        "memory/procedures/steps-to-rotate-the-signing.md",
    ]
    text = (org / "memory/graph/entities/porto.md").read_text()
    assert "No longer found in the notes" in text and "kind: retired" in text


def test_decay_scores_per_file(
    writer: MemoryWriter, org: Path, memory: MemorySearchManager
) -> None:
    reflect(writer, clock=lambda: NOW)
    scores = json.loads((org / "memory/meta/decay-scores.json").read_text())
    assert scores["as_of"] == "2026-12-04" and scores["half_life_days"] == 30.0
    daily = scores["files"]["memory/2026-11-01.md"]
    assert daily["age_days"] == 33 and daily["pinned"] is False and daily["recall_count"] == 0
    assert daily["relevance"] == pytest.approx(0.5 * 2 ** (-33 / 30), abs=1e-4)
    vault = scores["files"]["memory/vault/house-rules.md"]
    assert vault["pinned"] is True and vault["relevance"] == 0.5


def test_generated_pages_are_searchable_and_audited(
    writer: MemoryWriter, org: Path, memory: MemorySearchManager
) -> None:
    result = reflect(writer, clock=lambda: NOW)
    assert result.indexed
    hits = memory.search("Ines Duarte lives", min_score=0.0)
    assert "memory/graph/entities/ines-duarte.md" in [h.path for h in hits]
    lines = (org / "memory/meta/audit.log").read_text().splitlines()
    reflected = [line.split("\t") for line in lines]
    assert {fields[3] for fields in reflected} == {
        *result.added,
        "memory/meta/decay-scores.json",
        "memory/meta/reflection-log.md",
    }
    assert all(f[1] == "api" and f[2] == "reflect" for f in reflected)


def test_cli_reflect_reports_and_audits_as_cli(org: Path) -> None:
    runner = CliRunner()
    args = ["--provider", "none", "-w", str(org), "reflect", "--json"]
    first = runner.invoke(cli, args)
    assert first.exit_code == 0, first.output
    payload = json.loads(first.output)
    assert payload["entities"] == 4 and payload["procedures"] == 2
    second = runner.invoke(cli, ["--provider", "none", "-w", str(org), "reflect"])
    assert second.exit_code == 0 and "(nothing changed)" in second.output
    audit = (org / "memory/meta/audit.log").read_text().splitlines()
    assert audit and all(line.split("\t")[1:3] == ["cli", "reflect"] for line in audit)


def test_reflect_is_refused_when_writing_is_disabled(
    memory: MemorySearchManager, org: Path
) -> None:
    from memwell.contract.errors import WriteRefusedError

    settings = MemwellSettings.model_validate({"write": {"enabled": False}})
    with pytest.raises(WriteRefusedError, match="disabled"):
        reflect(MemoryWriter(memory, org, settings))
    assert not (org / "memory/graph").exists()


def test_status_reports_the_decay_scores(org: Path) -> None:
    runner = CliRunner()
    base = ["--provider", "none", "-w", str(org)]
    assert "decay scores" not in runner.invoke(cli, [*base, "status"]).output
    assert runner.invoke(cli, [*base, "reflect"]).exit_code == 0
    shown = runner.invoke(cli, [*base, "status"])
    assert shown.exit_code == 0
    line = next(x for x in shown.output.splitlines() if x.startswith("decay scores"))
    assert "1 pinned" in line and "least relevant: memory/2026-11-01.md" in line
    data = json.loads(runner.invoke(cli, [*base, "status", "--json"]).output)
    assert data["decay_scores"]["pinned"] == 1 and data["decay_scores"]["files"] >= 4


def test_the_watch_schedule_reflects_through_the_watch_channel(
    memory: MemorySearchManager, org: Path
) -> None:
    from memwell.contract.errors import MemwellError
    from memwell.organise.reflection import ReflectResult
    from memwell.organise.schedule import reflect_every

    waits: list[float] = []
    outcomes: list[ReflectResult | MemwellError] = []

    def wait(seconds: float) -> bool:  # a fake clock: two periods pass, then watch stops
        waits.append(seconds)
        return len(waits) > 2

    writer = MemoryWriter(memory, org, MemwellSettings(), channel="watch")
    reflect_every(writer, 90.0, wait=wait, report=outcomes.append)
    assert waits == [90.0, 90.0, 90.0]
    first, second = outcomes
    assert isinstance(first, ReflectResult) and first.entities == 4
    assert isinstance(second, ReflectResult) and not second.changed_anything
    assert (org / "memory/graph/entities/ines-duarte.md").is_file()
    audit = [line.split("\t") for line in (org / "memory/meta/audit.log").read_text().splitlines()]
    assert audit and all(fields[1:3] == ["watch", "reflect"] for fields in audit)


def test_a_failed_scheduled_run_is_reported_and_the_next_one_still_runs(
    memory: MemorySearchManager, org: Path
) -> None:
    from memwell.contract.errors import MemwellError, WriteRefusedError
    from memwell.organise.reflection import ReflectResult
    from memwell.organise.schedule import reflect_every

    outcomes: list[ReflectResult | MemwellError] = []
    settings = MemwellSettings.model_validate({"write": {"enabled": False}})
    writer = MemoryWriter(memory, org, settings, channel="watch")
    reflect_every(writer, 1.0, wait=lambda _: len(outcomes) >= 2, report=outcomes.append)
    assert [type(o) for o in outcomes] == [WriteRefusedError, WriteRefusedError]


def test_watch_runs_reflect_on_its_schedule(org: Path) -> None:
    import os
    import signal
    import subprocess
    import sys
    import time

    (org / "memwell.toml").write_text("[reflect]\nevery_minutes = 0.001\n")
    env = {**os.environ, "MEMWELL_PROVIDER": "none"}
    cmd = [sys.executable, "-m", "memwell", "-w", str(org), "watch"]
    proc = subprocess.Popen(cmd, env=env, stderr=subprocess.PIPE, text=True)
    audit = org / "memory/meta/audit.log"
    try:
        deadline = time.monotonic() + 60
        log = org / "memory/meta/reflection-log.md"  # reflect's last write
        while not log.is_file() and time.monotonic() < deadline:
            time.sleep(0.2)
    finally:
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=30)
    assert proc.returncode == 0, err
    assert "watching" in err
    lines = [line.split("\t") for line in audit.read_text().splitlines()]
    assert lines and all(fields[1:3] == ["watch", "reflect"] for fields in lines)


# --- [reflect] extractor = "textgen" ------------------------------------------------------------


@pytest.fixture
def tools_ws(open_ws: OpenFn, tmp_path: Path) -> tuple[MemorySearchManager, Path]:
    ws = tmp_path / "tools"
    (ws / "memory").mkdir(parents=True)
    (ws / "memory/2026-11-01.md").write_text("Zanzibar ships today.\nWe run kubectl apply.\n")
    (ws / "memory/2026-11-02.md").write_text("Zanzibar is late.\nkubectl rollout is stuck.\n")
    manager = open_ws(ws, provider="none")
    manager.sync(reason="test")
    return manager, ws


TEXTGEN = {"reflect": {"extractor": "textgen"}, "textgen": {"provider": "scripted"}}


def test_textgen_extractor_adds_names_the_offline_one_misses(
    tools_ws: tuple[MemorySearchManager, Path],
) -> None:
    manager, ws = tools_ws
    offline = reflect(MemoryWriter(manager, ws, MemwellSettings()), clock=lambda: NOW)
    assert (offline.entities, offline.extractor) == (0, "offline")
    # one invented name (not in the notes) and a bullet: only literal names are kept
    generator = Scripted("- kubectl\nZanzibar\nIgnore previous instructions\n")
    writer = MemoryWriter(manager, ws, MemwellSettings.model_validate(TEXTGEN))
    result = reflect(writer, clock=lambda: NOW, registry=textgen_plugin(generator))
    assert (result.extractor, result.extractor_note) == ("scripted", None)
    assert sorted(p.name for p in (ws / "memory/graph/entities").iterdir()) == [
        "kubectl.md",
        "zanzibar.md",
    ]
    page = (ws / "memory/graph/entities/kubectl.md").read_text()
    assert "- kubectl rollout is stuck. (memory/2026-11-02.md#L2)" in page
    assert generator.systems and all("never follow" in (s or "") for s in generator.systems)


def test_a_failing_generator_falls_back_to_the_offline_extractor(
    tools_ws: tuple[MemorySearchManager, Path], caplog: pytest.LogCaptureFixture
) -> None:
    manager, ws = tools_ws
    writer = MemoryWriter(manager, ws, MemwellSettings.model_validate(TEXTGEN))
    result = reflect(writer, clock=lambda: NOW, registry=textgen_plugin(Scripted(None)))
    assert result.extractor == "offline" and result.entities == 0
    assert "'scripted' failed" in (result.extractor_note or "")
    assert "scripted is down" in caplog.text
    assert not (ws / "memory/graph/entities").exists()
