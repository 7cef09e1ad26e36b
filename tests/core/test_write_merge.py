"""The union merge that carries an editor's change into a file the writer replaced."""

from __future__ import annotations

from hypothesis import given
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
