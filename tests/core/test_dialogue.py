"""Dialogue-shaped chunks (``Speaker: text`` turns) and the weights their queries fuse with."""

from __future__ import annotations

from datetime import datetime, timezone

import pytest
from hypothesis import given
from hypothesis import strategies as st
from memwell.agent.session_capture import render_session_note
from memwell.contract.config import HybridSettings
from memwell.retrieval.candidate import Candidate
from memwell.retrieval.chunking import chunk_markdown
from memwell.retrieval.dialogue import dialogue_weights, is_dialogue, mostly_dialogue, turn_speaker
from memwell.retrieval.pipeline import fuse_hybrid
from memwell.sources.sessions import TranscriptMessage

CONVERSATION = """# Session 1: 1:56 pm on 8 May, 2023

Caroline: Hey Mel! Good to see you! How have you been?
Melanie: Swamped with the kids & work. What's up with you?
Caroline: I went to a LGBTQ support group yesterday and it was so powerful.
Melanie: Wow, that's cool, Caroline! What happened that was so awesome?
Dr. Mary Ann: Sorry to barge in, I run that group.
Caroline: The transgender stories were so inspiring! [shares a photo: a rainbow flag]
"""


def test_a_session_note_and_its_chunks_of_turns_are_dialogue() -> None:
    assert is_dialogue(CONVERSATION)
    assert turn_speaker("Dr. Mary Ann: Sorry to barge in") == "Dr. Mary Ann"
    first, tail = chunk_markdown(CONVERSATION, tokens=80, overlap=12)
    assert (first.start_line, first.end_line, tail.start_line) == (1, 6, 6)
    assert is_dialogue(first.text), "heading and blank line aside, five turns"
    # three turns by three speakers read like metadata; the query-level majority covers it
    assert not is_dialogue(tail.text)


def test_memwell_session_notes_are_dialogue() -> None:
    roles = ["user", "assistant"] * 5
    messages = [
        TranscriptMessage(role, f"message {i} about the release", 0) for i, role in enumerate(roles)
    ]
    note = render_session_note(
        messages,
        ended_at=datetime(2026, 12, 2, tzinfo=timezone.utc),
        session_key="k",
        session_id="s",
        source="test",
    )
    assert turn_speaker("assistant: message 1 about the release") == "assistant"
    assert is_dialogue(note), "ten turns after three metadata lines"


@pytest.mark.parametrize(
    "text",
    [
        # metadata: every key once
        "Status: done\nOwner: Ann\nDue: Friday\nPriority: high",
        # a structured abstract on one line
        "BACKGROUND: Statins lower LDL. METHODS: We pooled trials. RESULTS: Risk fell.",
        # prose that mentions a speaker once
        "We met on Monday.\nAnn: asked about the release.\nThe rest was planning.\nDone.",
        # a list with one "speaker"
        "TODO: call Ann\nTODO: book the room\nTODO: send the agenda",
        # two turns are not a transcript yet
        "Ann: hi\nBob: hi",
        # a note with a few turns quoted among more prose lines
        "Notes\nAnn: ship it\nBob: wait\nAnn: fine\nWe shipped.\nIt broke.\nWe fixed it.",
    ],
)
def test_other_notes_are_not_dialogue(text: str) -> None:
    assert not is_dialogue(text)


@given(st.lists(st.sampled_from(["Ann", "Bob", "Dr. Lee"]), min_size=3, max_size=12))
def test_turn_lines_with_a_repeated_speaker_are_dialogue(speakers: list[str]) -> None:
    text = "\n".join(f"{name}: line {i} of the talk" for i, name in enumerate(speakers))
    assert is_dialogue(text) == (2 <= len(set(speakers)) < len(speakers))


def _cand(cid: str, text: str, vector_score: float, text_score: float) -> Candidate:
    return Candidate(
        cid, f"memory/{cid}.md", 1, 3, text, vector_score=vector_score, text_score=text_score
    )


TALK = "Ann: we fixed the build\nBob: which build?\nAnn: the nightly one"
PROSE = "We fixed the build.\nIt was the nightly one.\nBob asked which."


def _fused_order(text: str, hybrid: HybridSettings) -> list[str]:
    # a: a close paraphrase (cosine 0.6) without the query's words; b: the exact words
    # (relative BM25 0.4) with a weaker cosine (0.4). 0.7/0.3: a 0.42, b 0.40;
    # 0.65/0.35: a 0.39, b 0.40.
    a, b = _cand("a", text, 0.6, 0.0), _cand("b", text, 0.4, 0.4)
    out = fuse_hybrid([a, b], [b], hybrid, min_score=0.0, max_results=5, mtime_of=lambda p: None)
    return [c.id for c in out]


def test_transcripts_fuse_with_the_dialogue_weights() -> None:
    assert _fused_order(TALK, HybridSettings()) == ["b", "a"]
    assert _fused_order(PROSE, HybridSettings()) == ["a", "b"], "other notes keep 0.7/0.3"
    off = HybridSettings(dialogue_vector_weight=0.0)
    assert _fused_order(TALK, off) == ["a", "b"], "0 turns it off"


def test_weights_follow_the_majority_of_the_contenders() -> None:
    talk = [_cand(f"t{i}", TALK, 0.5, 0.0) for i in range(3)]
    prose = [_cand(f"p{i}", PROSE, 0.5, 0.0) for i in range(2)]
    assert mostly_dialogue(talk + prose, [])
    assert not mostly_dialogue(talk[:2] + prose, prose[:1])
    assert not mostly_dialogue([], [])
    hybrid = HybridSettings()
    swapped = dialogue_weights(hybrid, talk, prose)
    assert (swapped.vector_weight, swapped.text_weight) == pytest.approx((0.65, 0.35))
    assert (hybrid.vector_weight, hybrid.text_weight) == (0.7, 0.3), "settings not mutated"
    assert dialogue_weights(hybrid, prose, []) is hybrid
