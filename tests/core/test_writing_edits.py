"""The writer's text edits: examples, and properties that every other byte is kept."""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st
from memwell.contract.errors import WriteRefusedError
from memwell.writing.edits import Edit, append, append_under_heading, newline_of, replace_once

FRONT_MATTER = "---\ntitle: notes\ntags: [a]\n---\n"
BOM = "\ufeff"

# Lines of Markdown-ish text, including headings, blanks, CR and undecodable-byte escapes.
_TOKENS = [*"ab #-`~\t\r", "é", "\udcff", "---", "## H", "# Tasks", "```"]
_line = st.lists(st.sampled_from(_TOKENS), max_size=6).map("".join)
bodies = st.lists(_line, max_size=8).map("\n".join)
notes = st.text(alphabet="xyz \t\nü", min_size=1, max_size=30).filter(lambda s: s.strip() != "")
prefixes = st.sampled_from(["", BOM, FRONT_MATTER, BOM + FRONT_MATTER])


def _to_crlf(text: str) -> str:
    return text.replace("\r", "").replace("\n", "\r\n")


def test_append_adds_a_blank_line_and_a_final_newline() -> None:
    edit = append("# 2026-01-02\nfirst", "second\n\n")
    assert edit.text == "# 2026-01-02\nfirst\n\nsecond\n"
    assert (edit.start_line, edit.end_line) == (4, 4)
    assert append("", "only").text == "only\n"


def test_append_keeps_crlf() -> None:
    edit = append("# T\r\n\r\nold\r\n", "new\nmore")
    assert edit.text == "# T\r\n\r\nold\r\n\r\nnew\r\nmore\r\n"
    assert (edit.start_line, edit.end_line) == (5, 6)


def test_under_heading_goes_to_the_end_of_its_section() -> None:
    text = "# Memory\n\n## Decisions\n- one\n\n## People\nAlice\n"
    edit, created = append_under_heading(text, "decisions", "- two")
    assert not created
    assert edit.text == "# Memory\n\n## Decisions\n- one\n- two\n\n## People\nAlice\n"
    assert (edit.start_line, edit.end_line) == (5, 5)


@pytest.mark.parametrize(
    ("section", "item"),
    [
        ("- Code review needs two approvals.\n", "- Prefers tabs."),
        ("* one\n* two\n", "* Prefers tabs."),
        ("+ one\n", "+ Prefers tabs."),
        ("1. one\n2. two\n", "3. Prefers tabs."),
        ("9) nine\n", "10) Prefers tabs."),
        ("- one\n  more of one\n  - nested\n", "- Prefers tabs."),
        ("Intro.\n\n  - indented\n", "  - Prefers tabs."),
    ],
)
def test_a_note_under_a_list_becomes_its_next_item(section: str, item: str) -> None:
    """Issue 40 item 7: the section's form is followed (was a plain paragraph after a blank)."""
    text = f"# Team memory\n\n## Preferences\n{section}\n## Other\nx\n"
    edit, created = append_under_heading(text, "Preferences", "Prefers tabs.")
    assert not created
    assert edit.text == f"# Team memory\n\n## Preferences\n{section}{item}\n\n## Other\nx\n"
    line = 4 + section.count("\n")
    assert (edit.start_line, edit.end_line) == (line, line)


def test_a_list_item_note_keeps_its_lines_under_the_marker_and_crlf() -> None:
    text = "## Preferences\r\n- one\r\n"
    edit, _ = append_under_heading(text, "Preferences", "first line\nsecond\n\nthird")
    assert edit.text == text + "- first line\r\n  second\r\n\r\n  third\r\n"
    assert (edit.start_line, edit.end_line) == (3, 6)


def test_a_section_ending_in_a_paragraph_gets_a_paragraph() -> None:
    text = "## Notes\n- one\n\nThen a paragraph.\n"
    edit, _ = append_under_heading(text, "Notes", "Prefers tabs.")
    assert edit.text == text + "\nPrefers tabs.\n"
    thematic = "## Notes\ntext\n---\n"
    assert append_under_heading(thematic, "Notes", "n")[0].text == thematic + "\nn\n"


def test_subsections_belong_to_their_section() -> None:
    text = "## A\nx\n### A.1\ny\n## B\n"
    edit, _ = append_under_heading(text, "## A", "z")
    assert edit.text == "## A\nx\n### A.1\ny\n\nz\n\n## B\n"


def test_missing_heading_is_appended_with_its_level() -> None:
    edit, created = append_under_heading("# Memory\n", "### Later", "note")
    assert created
    assert edit.text == "# Memory\n\n### Later\n\nnote\n"
    assert (edit.start_line, edit.end_line) == (5, 5)


def test_headings_in_front_matter_and_code_fences_do_not_count() -> None:
    text = "---\n# Tasks\n---\n```\n# Tasks\n```\n"
    edit, created = append_under_heading(text, "Tasks", "real")
    assert created and edit.text.startswith(text)


def test_replace_needs_exactly_one_occurrence() -> None:
    with pytest.raises(WriteRefusedError) as missing:
        replace_once("abc", "x", "y")
    assert missing.value.reason == "not_found"
    with pytest.raises(WriteRefusedError) as twice:
        replace_once("aaa", "aa", "b")  # overlapping occurrences count
    assert twice.value.reason == "not_unique"
    with pytest.raises(WriteRefusedError):
        replace_once("abc", "", "y")


def test_replace_in_crlf_file_matches_lf_text() -> None:
    edit = replace_once("a\r\nold\r\nline\r\nz\r\n", "old\nline", "new\nlines")
    assert edit.text == "a\r\nnew\r\nlines\r\nz\r\n"
    assert (edit.start_line, edit.end_line) == (2, 3)


@given(prefix=prefixes, body=bodies, note=notes, crlf=st.booleans())
def test_append_keeps_every_existing_byte(prefix: str, body: str, note: str, crlf: bool) -> None:
    original = prefix + body
    if crlf:
        original = _to_crlf(original)
    edit = append(original, note)
    assert edit.text.startswith(original)
    added = edit.text[len(original) :]
    newline = newline_of(original)
    if newline == "\r\n":
        assert "\n" not in added.replace("\r\n", "")
    assert _written(edit) == _as_written(note)


@given(prefix=prefixes, body=bodies, note=notes, heading=st.sampled_from(["H", "Tasks", "a"]))
def test_heading_insert_only_inserts(prefix: str, body: str, note: str, heading: str) -> None:
    original = prefix + body
    edit, _ = append_under_heading(original, heading, note)
    assert _is_one_insertion(original, edit.text)
    written = _written(edit)
    assert written == _as_written(note) or _unitemised(written) == _as_written(note)


@given(
    before=bodies,
    after=bodies,
    new=st.text(alphabet="pq\n", max_size=10),
    prefix=prefixes,
    crlf=st.booleans(),
)
def test_replace_changes_only_the_passage(
    before: str, after: str, new: str, prefix: str, crlf: bool
) -> None:
    old = "<<UNIQUE\nPASSAGE>>"
    original = f"{prefix}{before}{old}{after}"
    if crlf:
        original = _to_crlf(original)
    edit = replace_once(original, old, new)
    written = _to_crlf(new) if newline_of(original) == "\r\n" else new
    expected = original.replace(old if old in original else _to_crlf(old), written)
    assert edit.text == expected


def _written(edit: Edit) -> str:
    """The lines the edit says it wrote, with CRs dropped."""
    lines = edit.text.split("\n")[edit.start_line - 1 : edit.end_line]
    return "\n".join(lines).replace("\r", "")


def _as_written(note: str) -> str:
    lines = note.split("\n")
    while not lines[0].strip():
        del lines[0]
    return "\n".join(lines).rstrip()


def _unitemised(written: str) -> str | None:
    """``written`` without the list marker a note under a list gets, else ``None``."""
    marker = re.match(r" {0,3}(?:[-*+]|[0-9]{1,9}[.)]) ", written)
    if marker is None:
        return None
    pad = " " * len(marker.group())
    first, *rest = written[marker.end() :].split("\n")
    return "\n".join([first, *(line.removeprefix(pad) for line in rest)])


def _is_one_insertion(original: str, edited: str) -> bool:
    """True if ``edited`` is ``original`` with one non-empty run of characters inserted."""
    if len(edited) <= len(original):
        return False
    head = 0
    while head < len(original) and original[head] == edited[head]:
        head += 1
    tail = 0
    while tail < len(original) - head and original[-1 - tail] == edited[-1 - tail]:
        tail += 1
    return head + tail == len(original)
