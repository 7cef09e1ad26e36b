"""Compression keeps every decision and task at every budget that holds them, names real
entities, and refuses a budget too small (held-apart transcript, after issue 39)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from memwell.agent.compress_tool import run_compress
from memwell.cli.main import cli
from memwell.context.compress import BudgetTooSmallError, compress, count_tokens
from memwell.context.salience import entities
from memwell.context.tokens import EstimatedTokens
from memwell.context.transcript import Turn

COUNTER = EstimatedTokens()
DECISION = "We decided to move the billing database to Postgres 16 on the Hetzner cluster."
REMINDER = "Remind me to rebuild the pgvector extension after the upgrade."
MUST = "We must rotate the Stripe keys before Friday."
NEXT = "Next step: Marta drafts the cutover runbook."
TRANSCRIPT = [
    Turn("user", "Can you look at the billing database upgrade with me? First the plan."),
    Turn("assistant", "Noted. Will do. First, which version does Marta want?"),
    Turn("user", f"Marta wants the newest one. {DECISION}"),
    Turn("tool", "\n".join(f"log line {i}: vacuum ok" for i in range(150))),
    Turn("assistant", "Can do. The dump of the billing schema finished without errors."),
    Turn("user", f"{REMINDER} {MUST}"),
    Turn("assistant", f"Will do. {NEXT}"),
    Turn("user", "Thanks, that is all for now."),
]
KEPT = (DECISION, REMINDER, MUST, NEXT)


def test_entities_are_names_not_sentence_starts() -> None:
    names = entities([t.content for t in TRANSCRIPT if t.role != "tool"], 25)
    assert {"Marta", "Postgres", "Hetzner", "Stripe"} <= set(names)
    assert not {"Can", "First", "Noted", "Will", "Next", "Remind", "Thanks"} & set(names)


def test_every_budget_keeps_every_decision_and_task_or_refuses() -> None:
    total = count_tokens(TRANSCRIPT, COUNTER)
    smallest_ok: int | None = None
    for budget in range(20, total * 2, 7):
        try:
            result = compress(TRANSCRIPT, budget, counter=COUNTER)
        except BudgetTooSmallError as exc:
            assert smallest_ok is None, f"refused {budget} after accepting {smallest_ok}"
            assert "decisions and open tasks" in str(exc)
            continue
        smallest_ok = smallest_ok or budget
        assert result.fits, budget
        text = "\n".join(t.content for t in result.turns)
        for sentence in KEPT:
            assert sentence in text, (budget, result.level, sentence)
        if result.digest is not None:
            assert (
                REMINDER in result.digest["open_tasks"] and DECISION in result.digest["decisions"]
            )
    assert smallest_ok is not None and smallest_ok < total


def test_a_budget_too_small_is_an_error_on_every_surface(tmp_path: Path) -> None:
    with pytest.raises(BudgetTooSmallError, match="cannot hold"):
        compress(TRANSCRIPT, 60, counter=COUNTER)
    messages = [t.to_dict() for t in TRANSCRIPT]
    payload = run_compress({"messages": messages, "budget_tokens": 60}, COUNTER)
    assert payload["reason"] == "budget_too_small" and "cannot hold" in payload["error"]
    assert "turns" not in payload
    transcript = tmp_path / "t.jsonl"
    transcript.write_text("\n".join(json.dumps(m) for m in messages) + "\n")
    ws = tmp_path / "ws"
    ws.mkdir()
    args = ["--provider", "none", "-w", str(ws), "compress", str(transcript)]
    refused = CliRunner().invoke(cli, [*args, "--budget", "60"])
    assert refused.exit_code != 0 and "cannot hold" in str(refused.exception)
    fine = CliRunner().invoke(cli, [*args, "--budget", "400", "--json"])
    assert fine.exit_code == 0, fine.output
    digest = json.loads(fine.output)
    assert all(sentence in json.dumps(digest) for sentence in KEPT)
