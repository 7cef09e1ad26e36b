"""Auto-capture quality on a scripted 30-turn conversation, with the real LanceDB table.

Decisions, plain facts and corrections are captured; questions, filler and one-character
lines are not; secrets are masked in the table and in the journal; importance (set from what
a memory is) orders recall.
"""

from __future__ import annotations

from pathlib import Path

import lancedb
import pytest
from lancedb_helpers import Build
from memwell.agent.lifecycle import TurnMessage, after_turn
from memwell.registry.plugins import PluginRegistry
from memwell_lancedb import tools
from memwell_lancedb.memory import Memory, MemoryHit

TOKEN = "ghp_Q7fX2mB9kLp4Rt8Vw3Zy6Hd1Jn5Cs0Ae7Gu2"

#: 30 turns: (user message, assistant reply).
CONVERSATION: list[tuple[str, str]] = [
    ("Hi!", "Hello! How can I help?"),
    ("We decided to use Postgres for the billing service.", "Noted: Postgres for billing."),
    ("ok", "Anything else?"),
    ("What editor theme do I prefer?", "I don't know yet. I always prefer asking."),
    ("The API rate limit is 100 requests per minute.", "Good to know."),
    ("thanks", "You're welcome."),
    ("We'll use GitHub Actions for CI from now on.", "Sounds good, I will use it too."),
    ("x", "?"),
    ("Can you remind me what the rate limit is?", "It is 100 requests per minute."),
    ("Our staging server is called Falcon.", "Falcon it is."),
    ("Sounds good!", "Great."),
    ("Actually, it's Postgres 16, not Postgres 15.", "Thanks for the correction."),
    ("How do I rotate the deploy key?", "Use the admin console."),
    (f"The deploy token is {TOKEN} for the release job.", "Stored safely."),
    ("k", "..."),
    ("I prefer dark themes in every editor.", "Dark themes, got it."),
    ("Thanks so much!", "Any time."),
    ("Let's go with weekly releases on Tuesdays.", "Weekly Tuesday releases."),
    ("Is it raining in Prague today?", "I can't check the weather."),
    ("The standup is at 9:30 every weekday.", "I'll remember the standup time."),
    ("lol", "😀"),
    ("Why did the build fail yesterday?", "A flaky test, I think."),
    ("I meant the nightly build, not the release build.", "The nightly one, understood."),
    ("Hmm, not sure yet", "Take your time."),
    ("Where do we keep the runbooks?", "In the wiki."),
    ("The on-call rotation has 6 engineers this quarter.", "Six engineers, okay."),
    ("yes", "Okay."),
    ("Should we cache the exchange rates?", "Probably, yes."),
    ("Remember that the office closes at 18:00 on Fridays.", "I'll remember."),
    ("bye", "Goodbye!"),
]

CAPTURED = {
    "We decided to use Postgres for the billing service.": ("decision", 0.85),
    "The API rate limit is 100 requests per minute.": ("fact", 0.7),
    "We'll use GitHub Actions for CI from now on.": ("decision", 0.85),
    "Our staging server is called Falcon.": ("entity", 0.75),
    "Actually, it's Postgres 16, not Postgres 15.": ("fact", 0.9),
    "I prefer dark themes in every editor.": ("preference", 0.75),
    "Let's go with weekly releases on Tuesdays.": ("decision", 0.85),
    "The standup is at 9:30 every weekday.": ("fact", 0.7),
    "I meant the nightly build, not the release build.": ("fact", 0.9),
    "The on-call rotation has 6 engineers this quarter.": ("fact", 0.7),
    "Remember that the office closes at 18:00 on Fridays.": ("other", 0.7),
}


def _table_rows(uri: str) -> list[dict[str, object]]:
    """The memories table as LanceDB itself returns it (not through memwell's store)."""
    rows: list[dict[str, object]] = (
        lancedb.connect(uri).open_table("memories").to_arrow().to_pylist()
    )
    return rows


def test_a_scripted_conversation_captures_what_matters(
    build: Build, workspace: Path, registry: PluginRegistry
) -> None:
    memory = build(workspace, lance={"auto_capture": True})
    for user, assistant in CONVERSATION:
        after_turn(
            memory,
            [TurnMessage("user", user), TurnMessage("assistant", assistant)],
            session_key="agent:main:direct",
            registry=registry,
        )
    rows = _table_rows(memory.uri)
    texts = {str(row["text"]) for row in rows}
    secret_row = next(text for text in texts if text.startswith("The deploy token is"))
    assert TOKEN not in secret_row and "ghp_Q7" in secret_row  # masked, still recognisable
    assert texts - {secret_row} == set(CAPTURED)
    for row in rows:
        if row["text"] in CAPTURED:
            assert (row["category"], row["importance"]) == CAPTURED[str(row["text"])], row["text"]
    assert not any(str(text).rstrip().endswith("?") for text in texts)  # no question stored
    journal = (workspace / "memory" / "captured.md").read_text(encoding="utf-8")
    assert TOKEN not in journal and journal.count("\n## ") + journal.startswith("## ") == 12
    assert "The API rate limit is 100 requests per minute." in journal
    for question in ("What editor theme", "Can you remind", "Is it raining", "Where do we"):
        assert question not in journal
    # The preference comes back first for the question that used to be stored as one.
    hits = memory.memories.recall("What editor theme do I prefer?")
    assert hits[0].memory.text == "I prefer dark themes in every editor."


def test_trivial_memories_are_refused_by_the_store_tool(build: Build, workspace: Path) -> None:
    memory = build(workspace)
    for text in ("x", "ok", "  Thanks!  ", "k k"):
        result = tools.memory_store(memory, text)
        assert result["action"] == "rejected", text
    assert memory.memories.stats()["count"] == 0
    assert tools.memory_store(memory, "The VPN gateway is vpn2.example.net")["action"] == "created"


def test_a_message_mixing_a_statement_and_a_question_keeps_the_statement(
    build: Build, workspace: Path
) -> None:
    memory = build(workspace, lance={"auto_capture": True})
    report = memory.capture_turn(
        [TurnMessage("user", "We decided to ship on Mondays. Can you add it to the calendar?")]
    )
    assert [(d.text, outcome) for d, outcome in report] == [
        ("We decided to ship on Mondays.", "created")
    ]


def _hit(score: float, importance: float) -> MemoryHit:
    return MemoryHit(Memory("id", "t", "fact", importance, 0), score)


def test_importance_weights_the_recall_order(build: Build, workspace: Path) -> None:
    assert _hit(0.9, 0.0).rank == pytest.approx(0.72)
    assert _hit(0.8, 1.0).rank > _hit(0.9, 0.0).rank  # importance can outrank similarity
    memory = build(workspace)
    low = memory.memories.store("Deploy the billing service from the main branch", importance=0.0)
    high = memory.memories.store(
        "We deploy the billing service from main every week", importance=1.0
    )
    query = "deploy the billing service from main"
    hits = memory.memories.recall(query, limit=2)
    assert [h.memory.id for h in hits] == [h.memory.id for h in sorted(hits, key=lambda h: -h.rank)]
    by_similarity = sorted(hits, key=lambda h: -h.score)
    assert by_similarity[0].memory.id == low.memory.id  # more similar, but unimportant
    assert hits[0].memory.id == high.memory.id
