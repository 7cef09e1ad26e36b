"""The union merge that carries an editor's change into a file the writer replaced."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st
from memwell.writing.merge import union_merge

lines = st.lists(st.sampled_from(["a\n", "b\n", "\n", "# H\n", "c\n"]), max_size=8)


def test_changes_to_different_lines_both_apply() -> None:
    base = b"one\ntwo\nthree\n"
    ours = b"one\ntwo\nthree\n\nnote\n"
    theirs = b"ONE\ntwo\nthree\n"
    assert union_merge(base, ours, theirs) == b"ONE\ntwo\nthree\n\nnote\n"


def test_overlapping_changes_keep_both_ours_first() -> None:
    base = b"keep\nold\n"
    assert union_merge(base, b"keep\nmine\n", b"keep\ntheirs\n") == b"keep\nmine\ntheirs\n"
    assert union_merge(base, b"keep\nsame\n", b"keep\nsame\n") == b"keep\nsame\n"


@given(
    base=lines,
    ours=st.tuples(st.integers(0, 8), st.lists(st.just("ours\n"), min_size=1, max_size=3)),
    theirs=st.tuples(st.integers(0, 8), st.lists(st.just("theirs\n"), min_size=1, max_size=3)),
)
def test_insertions_of_both_sides_are_all_kept_around_the_base(
    base: list[str], ours: tuple[int, list[str]], theirs: tuple[int, list[str]]
) -> None:
    def inserted(at: int, new: list[str]) -> bytes:
        at = min(at, len(base))
        return "".join(base[:at] + new + base[at:]).encode()

    merged = union_merge("".join(base).encode(), inserted(*ours), inserted(*theirs)).decode()
    out = merged.splitlines(keepends=True)
    assert out.count("ours\n") == len(ours[1]) and out.count("theirs\n") == len(theirs[1])
    assert [line for line in out if line not in ("ours\n", "theirs\n")] == base


def test_both_sides_inserting_among_repeated_lines_duplicate_no_base_line() -> None:
    """The diff aligns each insertion with a neighbouring base line (found by hypothesis):
    both sides' insertions at one point are one region, their shared lines written once."""
    merged = union_merge(b"a\na\na\n", b"a\nours\na\na\n", b"a\ntheirs\na\na\n")
    assert merged == b"a\nours\ntheirs\na\na\n"


@settings(max_examples=1500, deadline=None)
@given(
    base=lines,
    ours=st.tuples(
        st.integers(0, 8), st.lists(st.sampled_from(["ours\n", "a\n"]), min_size=1, max_size=3)
    ),
    theirs=st.tuples(
        st.integers(0, 8), st.lists(st.sampled_from(["theirs\n", "b\n"]), min_size=1, max_size=3)
    ),
)
def test_insertions_that_repeat_base_lines_keep_every_line(
    base: list[str], ours: tuple[int, list[str]], theirs: tuple[int, list[str]]
) -> None:
    """Each side inserts lines that may equal base lines: the merge holds the base plus
    every inserted line, as a multiset, and each side's own file is a subsequence of it."""

    def inserted(at: int, new: list[str]) -> list[str]:
        at = min(at, len(base))
        return base[:at] + new + base[at:]

    ours_lines, theirs_lines = inserted(*ours), inserted(*theirs)
    merged = (
        union_merge(
            "".join(base).encode(), "".join(ours_lines).encode(), "".join(theirs_lines).encode()
        )
        .decode()
        .splitlines(keepends=True)
    )
    assert sorted(merged) == sorted(base + ours[1] + theirs[1])
    for side in (ours_lines, theirs_lines):
        rest = iter(merged)
        assert all(line in rest for line in side), "a side's lines are in the merge in order"
