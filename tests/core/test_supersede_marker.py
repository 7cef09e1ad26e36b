"""The supersession marker and the fact matching behind it (held-apart pairs, not the bench's)."""

from __future__ import annotations

from datetime import date

import pytest
from hypothesis import given
from hypothesis import strategies as st
from memwell.retrieval.supersede_marker import (
    is_superseded,
    mark_line,
    marker,
    parse_superseded,
    superseded_lines,
)
from memwell.writing.facts import facts_of, superseding_pairs

WHEN = date(2026, 6, 3)

# Held apart from bench/data/supersede_pairs.tsv: written for these tests only.
UPDATES = [
    ("- Postgres on staging: port 5432", "- Postgres on staging: port 6543"),
    ("The CI runners have 8 cores.", "The CI runners now have 16 cores."),
    ("Jana is the owner of the search service.", "Ravi is now the owner of the search service."),
    ("The board meeting is on Oct 3.", "The board meeting is on Oct 10."),
    ("Payroll runs at 6pm.", "Payroll runs at 8pm."),
    ("The staging DB listens on port 5432.", "Staging database now listens on port 6432."),
    ("Code freeze starts on 2026-11-20.", "Code freeze now starts on 2026-11-27."),
    ("Maria prefers email over Slack.", "Maria prefers Slack over email."),
    ("Sam prefers morning meetings.", "Sam now prefers afternoon meetings."),
    ("The retro happens on Fridays.", "The retro happens on Wednesdays now."),
]
LOOK_ALIKES = [
    ("The staging DB listens on port 5432.", "The production DB listens on port 6432."),
    ("The staging DB listens on port 5432.", "The staging cache listens on port 6379."),
    ("Invoices are kept for 21 days.", "The invoice deadline is March 21."),
    ("Log retention is 21 days.", "The launch deadline is March 21."),
    ("The board meeting is on Oct 3.", "The team lunch is on Oct 10."),
    ("Payroll runs at 6pm.", "Payroll for contractors runs at 8pm."),
    ("Jana is the owner of the search service.", "Jana is the owner of the billing service."),
    ("The CI runners have 8 cores.", "The CI runners have 32 GB memory."),
    ("Sam prefers morning meetings.", "Sam now prefers green tea."),
    ("The EU cluster has 12 nodes.", "The US cluster has 9 nodes."),
    ("Deploy window is 14:00 to 16:00.", "Deploy window is 15:00."),
    ("Backups run at 2am and 2pm.", "Backups now run at 4am."),
    ("The staging DB listens on port 5432.", "The staging DB listened on port 5432 before."),
    ("The staging DB listens on port 5432.", "The staging DB does not listen on port 6432."),
    ("The staging DB listens on port 5432.", "The staging DB listens on port 5432."),
]


@pytest.mark.parametrize(("old", "new"), UPDATES)
def test_updates_are_recognised(old: str, new: str) -> None:
    assert superseding_pairs(new, old), (old, new)


@pytest.mark.parametrize(("old", "new"), LOOK_ALIKES)
def test_look_alikes_about_other_subjects_are_not(old: str, new: str) -> None:
    assert not superseding_pairs(new, old), (old, new)


def test_a_fact_names_attribute_value_and_subject() -> None:
    (fact,) = facts_of("- The staging database listens on port 5432.")
    assert (fact.attribute, fact.value, fact.subject) == (
        "port",
        "5432",
        frozenset({"staging", "database"}),
    )
    (retention,) = facts_of("Log retention is 21 days.")
    (deadline,) = facts_of("The launch deadline is March 21.")
    assert (retention.attribute, deadline.attribute) == ("count:day", "date")


def test_the_marker_reads_back() -> None:
    line = "- The staging database listens on port 5432.\r\n"
    marked = mark_line(line, WHEN, "memory/2026-06-03.md", 4)
    assert marked == (
        "- The staging database listens on port 5432. "
        "*(superseded 2026-06-03 by memory/2026-06-03.md#L4)*\r\n"
    )
    parsed = parse_superseded(marked)
    assert parsed is not None
    assert parsed.original == line[:-2]
    assert (parsed.date, parsed.path, parsed.start_line, parsed.citation) == (
        WHEN,
        "memory/2026-06-03.md",
        4,
        "memory/2026-06-03.md#L4",
    )
    with pytest.raises(ValueError, match="superseded already"):
        mark_line(marked, WHEN, "memory/x.md", 1)


def test_ranges_paths_with_spaces_and_non_markers() -> None:
    suffix = marker(WHEN, "memory/my notes (old).md", 3, 5)
    parsed = parse_superseded("fact" + suffix)
    assert parsed is not None and (parsed.path, parsed.end_line) == ("memory/my notes (old).md", 5)
    assert not is_superseded("We superseded the old plan (see notes).")
    assert not is_superseded("x *(superseded 2026-13-40 by a.md#L1)*")
    assert not is_superseded("x *(superseded 2026-06-03 by a.md#L1)* trailing words")
    text = "a\nb *(superseded 2026-06-03 by memory/x.md#L9)*\r\nc\n"
    assert list(superseded_lines(text)) == [2]


_LINE = st.text(
    alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="\r\n"), max_size=80
)


@given(line=_LINE, eol=st.sampled_from(["", "\n", "\r\n"]), start=st.integers(1, 10_000))
def test_every_byte_of_the_old_line_stays(line: str, eol: str, start: int) -> None:
    if is_superseded(line):
        return
    marked = mark_line(line + eol, WHEN, "memory/2026-06-03.md", start)
    assert marked.startswith(line)
    assert marked.endswith(eol)
    parsed = parse_superseded(marked)
    assert parsed is not None and parsed.original == line and parsed.start_line == start


class _Generator:
    id = "fake"
    model = "m"

    def __init__(self, answer: str | Exception) -> None:
        self.answer = answer
        self.prompts: list[str] = []

    def generate(self, prompt: str, *, max_tokens: int, system: str | None = None) -> str:
        self.prompts.append(prompt)
        if isinstance(self.answer, Exception):
            raise self.answer
        return self.answer


def test_the_text_generator_confirms_or_vetoes() -> None:
    from memwell.contract.errors import ProviderError
    from memwell.writing.confirm import text_generator_confirm

    yes, no, broken = _Generator("Yes."), _Generator("no"), _Generator(ProviderError("down"))
    assert text_generator_confirm(yes)("old port 1", "new port 2") is True
    assert "Older note: old port 1" in yes.prompts[0] and "Newer note: new port 2" in yes.prompts[0]
    assert text_generator_confirm(no)("a", "b") is False
    assert text_generator_confirm(broken)("a", "b") is True  # the matching's answer stands


def test_versions_tell_subjects_apart() -> None:
    old = "Release 2.4 ships on 2026-07-01."
    assert not superseding_pairs("Release 2.5 ships on 2026-08-01.", old)
    assert superseding_pairs("Release 2.4 now ships on 2026-07-15.", old)
