"""Conversation transcripts: detect dialogue-shaped chunks and give their queries own weights.

Agent memory is mostly conversation, written one turn per line (``Speaker: text``, the
layout of session notes and of ``memwell eval``'s LoCoMo files). In such a chunk the vector
side sees a mean of many short, loosely related turns (greetings, thanks, several topics),
while an exact keyword hit still points at the one turn that holds the answer; on the LoCoMo
development split a larger keyword share ranks the right session first more often (session
R@1 0.741 at the default 0.7/0.3, 0.747-0.751 at a vector weight of 0.55-0.65; README,
Quality). SciFact abstracts and ordinary notes are not dialogue-shaped, so their weights stay.

A chunk is dialogue-shaped when at least :data:`MIN_TURNS` of its lines are turns, turns are
at least :data:`TURN_SHARE` of its lines (blank lines and Markdown headings aside), at least
two speakers talk and some speaker has more than one turn (``Owner: Ann`` / ``Due: Friday``
metadata names each key once, a ``TODO: ...`` list has one "speaker"). A query is answered
with the dialogue weights when most of the contenders, the first :data:`CONTENDERS`
candidates of each retriever, are dialogue-shaped.
"""

from __future__ import annotations

from collections.abc import Sequence

from memwell.contract.config import HybridSettings
from memwell.retrieval.candidate import Candidate
from memwell.util.lazy_import import lazy_pattern

MIN_TURNS = 3
TURN_SHARE = 0.75
CONTENDERS = 10

# "Caroline: ...", "Dr. Lee: ...", "Mary Ann Smith: ...", memwell's own session notes
# "user: ..." / "assistant: ..." (up to three words of letters, first one a letter).
_TURN = lazy_pattern(r"([^\W\d_][\w'.-]{0,30}(?: [^\W\d_][\w'.-]{0,30}){0,2}):\s+\S")


def turn_speaker(line: str) -> str | None:
    """The speaker of a ``Speaker: text`` line, else ``None``."""
    match = _TURN.match(line.strip())
    return match.group(1) if match else None


def is_dialogue(text: str) -> bool:
    """True if ``text`` is a run of ``Speaker: text`` turns (see the module docstring)."""
    lines = [s for s in (line.strip() for line in text.split("\n")) if s and not s.startswith("#")]
    speakers = [speaker for speaker in map(turn_speaker, lines) if speaker is not None]
    return (
        len(speakers) >= MIN_TURNS
        and len(speakers) >= TURN_SHARE * len(lines)
        and 2 <= len(set(speakers)) < len(speakers)
    )


def mostly_dialogue(vector: Sequence[Candidate], keyword: Sequence[Candidate]) -> bool:
    """True if most of the first :data:`CONTENDERS` hits of each list are dialogue-shaped."""
    contenders = {c.id: c.text for c in [*vector[:CONTENDERS], *keyword[:CONTENDERS]]}
    dialogue = sum(1 for text in contenders.values() if is_dialogue(text))
    return bool(contenders) and 2 * dialogue > len(contenders)


def dialogue_weights(
    hybrid: HybridSettings, vector: Sequence[Candidate], keyword: Sequence[Candidate]
) -> HybridSettings:
    """``hybrid`` with the weights ``dialogue_vector_weight`` / ``1 - dialogue_vector_weight``
    when the candidates are :func:`mostly_dialogue`, else ``hybrid`` itself (also when
    ``dialogue_vector_weight`` is 0: off)."""
    weight = hybrid.dialogue_vector_weight
    if weight <= 0 or not mostly_dialogue(vector, keyword):
        return hybrid
    return hybrid.model_copy(update={"vector_weight": weight, "text_weight": 1 - weight})
