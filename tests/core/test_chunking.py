"""Tests for the Markdown chunker: line budget, CJK weighting, overlap, long-line cuts."""

from __future__ import annotations

import itertools
import operator

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from memwell.retrieval.chunking import (
    Chunk,
    _utf16_len,
    chunk_ids,
    chunk_markdown,
    estimate_chars,
    remap_lines,
    sha256_hex,
)

WORKED_LINES = [
    "alpha beta gamma",
    "delta epsilon",
    "zeta eta theta iota",
    "kappa",
    "lambda mu nu xi omicron",
]


def weighted_size(chunk: Chunk) -> int:
    """Sum of line sizes (a lower bound of the segment sizes the chunker packed)."""
    return sum(estimate_chars(segment) + 1 for segment in chunk.text.split("\n"))


def utf16_len(text: str) -> int:
    return len(text.encode("utf-16-le")) // 2


def test_sha256_hex_known_vector() -> None:
    expected = "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
    assert sha256_hex("abc") == expected
    # UTF-8 (c3 a9), not Latin-1 or UTF-16.
    assert sha256_hex("é") == "4a99557e4033c3539de2eb65472017cad5f9557f7a0625a09f1c3f6e2ba69c4c"


def test_chunk_create_hashes_text() -> None:
    chunk = Chunk.create(3, 4, "hello\nworld")
    assert chunk == Chunk(3, 4, "hello\nworld", sha256_hex("hello\nworld"))


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("", 0),
        ("abc", 3),
        ("中文", 8),
        ("한", 4),
        ("𠀀", 4),
        ("😀", 1),
        ("a中😀", 1 + 4 + 1),
        ("\u2e7f\u2e80", 1 + 4),
        ("\ua4ff\ua500", 4 + 1),
        ("\ud7af\ud7b0", 4 + 1),
        ("\uf900\ufb00", 4 + 1),
        ("\U0002fa1f\U0002fa20", 4 + 1),
    ],
)
def test_estimate_chars_weights_cjk_class(text: str, expected: int) -> None:
    assert estimate_chars(text) == expected


_CLASS_EDGES = (
    "a \n\u2e7f\u2e80\u9fff\ua000\ua4ff\ua500\uac00\ud7af\uf900\ufaff\ufb00"
    "\U00020000\U0002fa1f\U0002fa20😀中"
)


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.sampled_from(list(_CLASS_EDGES)), max_size=40))
def test_estimate_chars_counts_each_cjk_class_code_point_three_times_more(text: str) -> None:
    """Counted over runs (and the ASCII shortcut): the same as one test per code point."""
    ranges = [(0x2E80, 0x9FFF), (0xA000, 0xA4FF), (0xAC00, 0xD7AF), (0xF900, 0xFAFF)]
    ranges.append((0x20000, 0x2FA1F))
    cjk = sum(any(lo <= ord(ch) <= hi for lo, hi in ranges) for ch in text)
    assert estimate_chars(text) == len(text) + 3 * cjk


def test_worked_example_overlap_carries_previous_lines() -> None:
    chunks = chunk_markdown("\n".join(WORKED_LINES), tokens=10, overlap=2)
    # The third chunk would carry lines 3-4 (26) but line 5 (24) must fit the budget of 40
    # too, so line 3 is dropped from the carried overlap (the reference keeps it: 50 > 40).
    assert [(c.start_line, c.end_line) for c in chunks] == [(1, 2), (2, 4), (4, 5)]
    assert [c.text for c in chunks] == [
        "\n".join(WORKED_LINES[0:2]),
        "\n".join(WORKED_LINES[1:4]),
        "\n".join(WORKED_LINES[3:5]),
    ]
    assert max(weighted_size(c) for c in chunks) <= 40


def test_overlap_stops_once_carried_size_reaches_overlap_chars() -> None:
    # overlapChars 8: line 2 weighs exactly 7 + 1, so it alone is carried, not line 1.
    chunks = chunk_markdown("x" * 30 + "\n" + "y" * 7 + "\n" + "z" * 5, tokens=10, overlap=2)
    assert chunks == [
        Chunk.create(1, 2, "x" * 30 + "\n" + "y" * 7),
        Chunk.create(2, 3, "y" * 7 + "\n" + "z" * 5),
    ]


def test_worked_example_long_ascii_line() -> None:
    chunks = chunk_markdown("x" * 100, tokens=10, overlap=0)
    assert [c.text for c in chunks] == ["x" * 40, "x" * 40, "x" * 20]
    assert all((c.start_line, c.end_line) == (1, 1) for c in chunks)


def test_worked_example_cjk_line() -> None:
    chunks = chunk_markdown("中文" * 30, tokens=10, overlap=0)
    assert [c.text for c in chunks] == ["中文" * 5] * 6


def test_cjk_gives_more_chunks_than_ascii_and_respects_budget() -> None:
    cjk = chunk_markdown("中" * 2000, tokens=400, overlap=0)
    ascii_chunks = chunk_markdown("a" * 2000, tokens=400, overlap=0)
    assert len(cjk) > len(ascii_chunks)
    assert all(estimate_chars(c.text) <= 1600 for c in cjk)
    assert "".join(c.text for c in cjk) == "中" * 2000


def test_english_lines_are_packed_and_not_resliced() -> None:
    chunks = chunk_markdown("a" * 3000, tokens=400, overlap=0)
    assert [len(c.text) for c in chunks] == [1600, 1400]


@pytest.mark.parametrize(
    ("text", "tokens"),
    [
        ("\u3400" * 200, 400),
        ("\U00020000" * 150, 400),
        ("\U00020000" * 120, 31),
        ("😀" * 50, 10),
        ("a" + "😀" * 50, 10),
        ("a" + "𠀀" * 33, 1),
    ],
    ids=["rare-bmp-ideographs", "ext-b", "ext-b-odd-cuts", "emoji", "emoji-odd", "ext-b-tiny"],
)
def test_astral_characters_never_split_and_text_kept(text: str, tokens: int) -> None:
    budget = max(32, tokens * 4)
    chunks = chunk_markdown(text, tokens=tokens, overlap=0)
    assert "".join(c.text for c in chunks) == text
    assert all((c.start_line, c.end_line) == (1, 1) for c in chunks)
    assert all(estimate_chars(c.text) <= budget for c in chunks)


def test_emoji_slices_cut_at_odd_utf16_offsets() -> None:
    # maxChars 32: "a" + 15 emoji is 31 units, the 16th emoji crosses unit 32 and is kept whole;
    # the next two slices (16 and 8 emoji, weighing 17 + 9) are packed into one chunk.
    chunks = chunk_markdown("a" + "😀" * 40, tokens=1, overlap=0)
    assert [c.text for c in chunks] == ["a" + "😀" * 16, "😀" * 24]


def test_cjk_ext_b_reslice_extends_cut_past_pair() -> None:
    # 21 units fit maxChars 32, but weigh 41: re-cut every 3 units ("a𠀀", then pairs); a cut at
    # unit 3 of a two-unit character moves one unit later instead of splitting it. The slices
    # (weights 6, 9, 9, ...) are then packed up to 32.
    chunks = chunk_markdown("a" + "𠀀" * 10, tokens=3, overlap=0)
    assert [c.text for c in chunks] == ["a" + "𠀀" * 5, "𠀀" * 5]


def test_long_prose_line_is_cut_after_sentences_not_mid_word() -> None:
    sentences = [f"Fact {i} is that the value of item {i} equals {i * 7}. " for i in range(40)]
    line = "".join(sentences).rstrip()
    chunks = chunk_markdown("# Notes\n\n" + line + "\ntail", tokens=64, overlap=16)
    assert len(chunks) > 5
    for chunk in chunks:
        body = chunk.text.removeprefix("# Notes\n\n").removesuffix("\ntail")
        assert body.startswith("Fact "), body[:30]
        assert body.rstrip().endswith("."), body[-30:]
        assert estimate_chars(chunk.text) <= 256
    # every sentence is whole in some chunk, and overlap repeats the previous chunk's last one
    assert all(any(s.strip() in c.text for c in chunks) for s in sentences)
    assert all(a.text.split(". ")[-1][:10] in b.text for a, b in itertools.pairwise(chunks[1:]))


def test_long_sentence_is_cut_after_words() -> None:
    line = " ".join(f"word{i:03d}" for i in range(100))  # 799 chars, no sentence end
    chunks = chunk_markdown(line, tokens=40, overlap=0)
    assert "".join(c.text for c in chunks) == line
    assert all(c.text.endswith(" ") or c is chunks[-1] for c in chunks)
    assert all(len(c.text) <= 160 for c in chunks)


def test_whitespace_only_chunks_are_dropped() -> None:
    chunks = chunk_markdown(" " * 100 + "\nhello", tokens=10, overlap=0)
    assert chunks == [Chunk.create(1, 2, " " * 20 + "\nhello")]


def test_blank_content_gives_no_chunks() -> None:
    assert chunk_markdown("") == []
    assert chunk_markdown(" \n\t\n\n") == []


def test_crlf_line_endings_are_stripped() -> None:
    chunks = chunk_markdown("alpha\r\nbeta\r\n")
    assert chunks == [Chunk.create(1, 3, "alpha\nbeta\n")]


def test_overlap_is_clamped_to_tokens_minus_one() -> None:
    content = "\n".join(WORKED_LINES * 4)
    assert chunk_markdown(content, tokens=10, overlap=100) == chunk_markdown(
        content, tokens=10, overlap=9
    )
    assert chunk_markdown(content, tokens=10, overlap=-5) == chunk_markdown(
        content, tokens=10, overlap=0
    )


def test_small_tokens_use_minimum_budget_of_32() -> None:
    chunks = chunk_markdown("y" * 70, tokens=2, overlap=0)
    assert [len(c.text) for c in chunks] == [32, 32, 6]


def test_tokens_below_one_rejected() -> None:
    with pytest.raises(ValueError, match="tokens"):
        chunk_markdown("text", tokens=0)


def test_remap_lines_maps_start_and_end() -> None:
    chunks = [Chunk.create(1, 2, "a\nb"), Chunk.create(2, 3, "b\nc"), Chunk.create(3, 3, "c")]
    remapped = remap_lines(chunks, [4, 9, 15])
    assert [(c.start_line, c.end_line) for c in remapped] == [(4, 9), (9, 15), (15, 15)]
    assert [(c.text, c.hash) for c in remapped] == [(c.text, c.hash) for c in chunks]


def test_remap_lines_empty_map_keeps_lines() -> None:
    chunks = [Chunk.create(2, 5, "x")]
    assert remap_lines(chunks, []) == chunks


def test_remap_lines_past_map_end_uses_last_entry() -> None:
    chunks = chunk_markdown("User: hi\nAssistant: hello\n")
    assert [(c.start_line, c.end_line) for c in remap_lines(chunks, [3, 7])] == [(3, 7)]


_ATOMS = st.sampled_from(
    [
        "a",
        "word ",
        " ",
        "\t",
        "\n",
        "\r\n",
        "中文",
        "한",
        "😀",
        "𠀀",
        "é",
        "\u3000",
        "-",
        ". ",
        "。",
    ]
)
_RUNS = st.builds(operator.mul, _ATOMS, st.integers(1, 150))
_CONTENT = st.lists(_RUNS | st.text(max_size=20), max_size=12).map("".join)
_TOKENS = st.integers(1, 40)
_OVERLAP = st.integers(-2, 45)


def _source_lines(content: str) -> list[str]:
    return [line.removesuffix("\r") for line in content.split("\n")]


def _aligned_with_source(chunk: Chunk, lines: list[str]) -> bool:
    """The chunk's text, without separators, starts in its first line and ends in its last."""
    span = lines[chunk.start_line - 1 : chunk.end_line]
    full = "".join(span)
    body = chunk.text.replace("\n", "")
    last_line_start = len(full) - len(span[-1])
    found = full.find(body)
    while found != -1:
        if found <= len(span[0]) and found + len(body) >= last_line_start:
            return True
        found = full.find(body, found + 1)
    return False


@settings(max_examples=150, deadline=None)
@given(content=_CONTENT, tokens=_TOKENS, overlap=_OVERLAP)
def test_property_chunks_cover_align_and_stay_in_budget(
    content: str, tokens: int, overlap: int
) -> None:
    chunks = chunk_markdown(content, tokens=tokens, overlap=overlap)
    lines = _source_lines(content)
    max_chars = max(32, tokens * 4)

    covered = {n for c in chunks for n in range(c.start_line, c.end_line + 1)}
    assert {n for n, line in enumerate(lines, start=1) if line.strip()} <= covered

    starts = [c.start_line for c in chunks]
    assert starts == sorted(starts)
    for chunk in chunks:
        assert 1 <= chunk.start_line <= chunk.end_line <= len(lines)
        assert chunk.text.strip()
        assert chunk.hash == sha256_hex(chunk.text)
        assert weighted_size(chunk) <= max_chars + 1
        assert all(estimate_chars(seg) <= max_chars for seg in chunk.text.split("\n"))
        assert len(chunk.text.split("\n")) >= chunk.end_line - chunk.start_line + 1
        assert _aligned_with_source(chunk, lines)
        assert chunk.text in "\n".join(lines[chunk.start_line - 1 : chunk.end_line])


@settings(max_examples=100, deadline=None)
@given(content=_CONTENT, tokens=_TOKENS)
def test_property_without_overlap_no_text_is_lost_or_repeated(content: str, tokens: int) -> None:
    chunks = chunk_markdown(content, tokens=tokens, overlap=0)

    def visible(text: str) -> str:
        return "".join(ch for ch in text if not ch.isspace())

    assert visible("".join(c.text for c in chunks)) == visible(content)
    for previous, following in itertools.pairwise(chunks):
        assert previous.end_line <= following.start_line


@given(st.text(alphabet=st.characters(codec=None, exclude_categories=()), max_size=60))
@settings(max_examples=300, deadline=None)
def test_utf16_len_counts_code_units(text: str) -> None:
    """Astral code points are two UTF-16 units, everything else (lone surrogates too) one."""
    assert _utf16_len(text) == len(text) + sum(1 for char in text if ord(char) > 0xFFFF)
    assert _utf16_len(text + "\ud800") == _utf16_len(text) + 1


def test_identical_chunks_of_one_file_get_distinct_ids() -> None:
    chunks = chunk_markdown("x" * 12000, tokens=64, overlap=0)
    keys = {(c.start_line, c.end_line, c.hash) for c in chunks}
    assert len(chunks) > len(keys), "several identical chunks of one line"
    ids = chunk_ids("memory", "memory/a.md", chunks, "m")
    assert len(set(ids)) == len(ids)
    assert ids == chunk_ids("memory", "memory/a.md", chunks, "m"), "stable"
    # an edit elsewhere in a file keeps the ids of chunks it did not move
    one = Chunk.create(1, 1, "alpha")
    assert chunk_ids("memory", "p", [one], "m")[0] == chunk_ids("memory", "p", [one, one], "m")[0]
    # path, source and model each take part, unambiguously
    others = [
        chunk_ids("sessions", "memory/a.md", chunks, "m"),
        chunk_ids("memory", "memory/b.md", chunks, "m"),
        chunk_ids("memory", "memory/a.md", chunks, "n"),
        chunk_ids("memory:memory/a.md", "", chunks, "m"),
    ]
    assert all(set(ids).isdisjoint(other) for other in others)


@settings(max_examples=60, deadline=None)
@given(
    text=st.lists(
        st.one_of(st.text(max_size=80), st.sampled_from(["x" * 3000, "ab " * 900, "= " * 700])),
        max_size=6,
    ).map("\n".join),
    tokens=st.integers(8, 200),
)
def test_chunk_ids_are_unique_for_any_file(text: str, tokens: int) -> None:
    chunks = chunk_markdown(text, tokens=tokens, overlap=tokens // 4)
    ids = chunk_ids("memory", "memory/a.md", chunks, "m")
    assert len(ids) == len(chunks) == len(set(ids))
