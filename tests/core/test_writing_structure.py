"""Notes and headings cannot restructure a memory file (issue 38.5).

A note never leaves a code fence open, a note written under a heading never ends that section,
a heading or file name is one line without control or bidi characters, and the heading finder
is not fooled by headings inside fenced code. Properties: whatever the note and the heading,
a write under a heading inserts one run of text (every other byte is kept), adds at most the
one section it names, and the next write under that heading finds the same section.
"""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from memwell.contract.errors import PathNotAllowedError, WriteRefusedError
from memwell.writing.edits import (
    _heading_title,
    _lines,
    _normalise,
    _scan,
    append,
    append_under_heading,
)
from memwell.writing.names import check_file_name, unsafe_character
from test_writing_edits import _is_one_insertion

FENCES = ["```", "~~~", "````", "```python", "  ```", "~~~~"]
TOKENS = ["a", "b", " ", "#", "## ", "# ", "### ", "x", "-", "`", "~", "\t", "é", "<!--"]
line = st.one_of(
    st.sampled_from(FENCES), st.lists(st.sampled_from(TOKENS), max_size=5).map("".join)
)
bodies = st.lists(line, max_size=10).map("\n".join)
notes = bodies.filter(lambda text: text.strip() != "")
heading_text = st.text(
    alphabet=st.characters(codec="utf-8", exclude_categories=("Cs",)), min_size=1, max_size=12
)


def section_headings(text: str) -> list[tuple[int, str]]:
    headings, _ = _scan(_lines(text))
    return [(level, title) for _, level, title in headings]


def test_note_with_an_unclosed_fence_is_closed_and_the_section_found_again() -> None:
    text = "# Memory\n\n## Decisions\n\n- one\n\n## People\n\nAlice\n"
    edit, _ = append_under_heading(text, "Decisions", "see:\n```\ncode\n# not a heading")
    # the section is a list, so the note is its next item, the fence indented under it
    assert "- see:\n  ```\n  code\n  # not a heading\n  ```\n" in edit.text
    assert section_headings(edit.text) == [(1, "Memory"), (2, "Decisions"), (2, "People")]
    again, created = append_under_heading(edit.text, "People", "Bob")
    assert not created
    assert again.text.count("## People") == 1
    assert append("# T\n", "~~~~\nx").text == "# T\n\n~~~~\nx\n~~~~\n"


def test_a_file_ending_inside_a_fence_gets_it_closed_before_a_new_section() -> None:
    text = "# Memory\n\n```\nleft open\n"
    edit, created = append_under_heading(text, "Later", "note")
    assert created and edit.text.startswith(text)
    assert section_headings(edit.text)[-1] == (2, "Later")
    assert append_under_heading(edit.text, "Later", "more")[1] is False


def test_headings_inside_fences_are_not_sections() -> None:
    text = "```\n## Notes\n```\n\n## Notes\n\nreal\n"
    edit, created = append_under_heading(text, "Notes", "added")
    assert not created
    assert edit.text == text + "\nadded\n"


def test_a_note_heading_that_would_end_the_section_is_refused() -> None:
    text = "## Notes\n\nx\n\n## Other\n"
    with pytest.raises(WriteRefusedError, match="would end the section") as refused:
        append_under_heading(text, "Notes", "intro\n# Big heading\nmore")
    assert refused.value.reason == "invalid"
    deeper, _ = append_under_heading(text, "Notes", "intro\n### Detail\nmore")
    assert "### Detail" in deeper.text


@pytest.mark.parametrize(
    "heading",
    ["Notes\n# Injected", "a\rb", "tab\there", "rtl\u202eevil", "iso\u2066late", "x\x1b[31m"],
)
def test_unsafe_characters_are_found(heading: str) -> None:
    assert unsafe_character(heading) is not None


def test_ordinary_text_has_no_unsafe_character() -> None:
    assert unsafe_character("Entscheidungen · 決定 — émoji 👍🏽 and ZWNJ \u200c") is None


@pytest.mark.parametrize(
    ("name", "why"),
    [
        ("notes\nmore", "U+000A"),
        ("evil\u202egpj.md", "U+202E"),
        ("CON", "Windows reserves"),
        ("projects/nul.md", "Windows reserves"),
        ("com1.notes", "Windows reserves"),
        ("x" * 300, "the limit is"),
        ("glpat-" + "A1b2C3d4E5f6G7h8I9j0", "looks like a secret"),
    ],
)
def test_bad_file_names_are_refused_saying_why(name: str, why: str) -> None:
    with pytest.raises(PathNotAllowedError, match=re.escape(why)) as refused:
        check_file_name(name)
    assert "A1b2C3d4E5f6G7h8I9j0" not in str(refused.value)


@pytest.mark.parametrize("name", ["console.md", "projects/com10", "connection-notes", "x" * 200])
def test_ordinary_file_names_pass(name: str) -> None:
    check_file_name(name)


@settings(max_examples=400, deadline=None)
@given(text=bodies, heading=heading_text, note=notes)
def test_a_write_under_a_heading_keeps_the_structure(text: str, heading: str, note: str) -> None:
    if unsafe_character(heading) is not None:
        return  # the writer refuses it before any edit (test_unsafe_characters_are_found)
    try:
        edit, created = append_under_heading(text, heading, note)
    except WriteRefusedError as exc:
        assert exc.reason in ("blank", "invalid")
        return
    assert _is_one_insertion(text, edit.text)
    before, after = section_headings(text), section_headings(edit.text)
    level, title = _section(before, heading)
    # Nothing at the section's level or above appears but the section itself.
    outer = [h for h in after if h[0] <= level]
    assert outer == [h for h in before if h[0] <= level] + ([(level, title)] if created else [])
    # The next write under the same heading finds that section rather than adding a copy.
    again, created_again = append_under_heading(edit.text, heading, "again")
    assert not created_again
    assert section_headings(again.text) == after


def _section(before: list[tuple[int, str]], heading: str) -> tuple[int, str]:
    """The (level, title) of the section a write under ``heading`` goes to."""
    title, level = _heading_title(heading)
    wanted = _normalise(title)
    found = next((h for h in before if _normalise(h[1]) == wanted), None)
    return found if found is not None else (level or 2, title)
