"""Tests for embedding input limits and request batching by bytes."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from memwell.retrieval.chunking import Chunk, sha256_hex
from memwell.retrieval.limits import (
    KNOWN_MAX_INPUT_TOKENS,
    batch_by_bytes,
    enforce_input_limit,
    max_input_tokens,
    split_chunk_to_byte_limit,
)


def utf8_len(text: str) -> int:
    return len(text.encode("utf-8"))


@pytest.mark.parametrize(
    ("provider", "model", "expected"),
    [
        ("openai", "text-embedding-3-small", 8192),
        ("openai", "text-embedding-3-large", 8192),
        ("openai", "text-embedding-ada-002", 8191),
        ("gemini", "text-embedding-004", 2048),
        ("gemini", "gemini-embedding-001", 2048),
        ("gemini", "gemini-embedding-2-preview", 8192),
        ("voyage", "voyage-3", 32000),
        ("voyage", "voyage-3-lite", 16000),
        ("voyage", "voyage-code-3", 32000),
        ("gemini", "some-future-model", 2048),
        ("local", "all-MiniLM-L6-v2", 2048),
        ("openai", "unknown-model", 8192),
        ("mistral", "mistral-embed", 8192),
        ("OpenAI", " text-embedding-ada-002 ", 8191),
    ],
)
def test_max_input_tokens_table_and_fallbacks(provider: str, model: str, expected: int) -> None:
    assert max_input_tokens(provider, model) == expected


def test_known_table_is_keyed_by_provider_and_model() -> None:
    assert KNOWN_MAX_INPUT_TOKENS["voyage:voyage-3-lite"] == 16000
    assert all(key.count(":") == 1 for key in KNOWN_MAX_INPUT_TOKENS)


def test_declared_limit_wins_when_positive() -> None:
    assert max_input_tokens("openai", "text-embedding-3-small", declared=512) == 512
    assert max_input_tokens("local", "any", declared=4096) == 4096
    assert max_input_tokens("voyage", "voyage-3", declared=0) == 32000
    assert max_input_tokens("voyage", "voyage-3", declared=None) == 32000


def test_chunk_within_limit_is_returned_unchanged() -> None:
    chunk = Chunk.create(2, 3, "short\ntext")
    assert split_chunk_to_byte_limit(chunk, 10) == [chunk]


def test_oversized_ascii_chunk_split_into_longest_pieces() -> None:
    chunk = Chunk.create(4, 9, "a" * 20000)
    pieces = split_chunk_to_byte_limit(chunk, 8000)
    assert [len(p.text) for p in pieces] == [8000, 8000, 4000]
    assert all((p.start_line, p.end_line) == (4, 9) for p in pieces)
    assert all(p.hash == sha256_hex(p.text) for p in pieces)
    assert "".join(p.text for p in pieces) == chunk.text


def test_emoji_are_not_split() -> None:
    chunk = Chunk.create(1, 1, "a" + "😀" * 10)
    pieces = split_chunk_to_byte_limit(chunk, 6)
    assert [p.text for p in pieces] == ["a😀"] + ["😀"] * 9


def test_multibyte_pieces_respect_limit() -> None:
    chunk = Chunk.create(1, 1, "😀" * 3000 + "中" * 10)
    pieces = split_chunk_to_byte_limit(chunk, 8000)
    assert [utf8_len(p.text) for p in pieces] == [8000, 4030]
    assert "".join(p.text for p in pieces) == chunk.text


def test_limit_below_widest_character_rejected() -> None:
    with pytest.raises(ValueError, match="limit_bytes"):
        split_chunk_to_byte_limit(Chunk.create(1, 1, "abcdef"), 3)


def test_local_provider_uses_conservative_fallback() -> None:
    chunks = [Chunk.create(1, 1, "x" * 5000)]
    pieces = enforce_input_limit(chunks, max_input_tokens("local", "unknown"))
    assert [utf8_len(p.text) for p in pieces] == [2048, 2048, 904]


def test_hard_cap_below_provider_limit_wins() -> None:
    chunks = [Chunk.create(1, 2, "small"), Chunk.create(3, 5, "y" * 20000)]
    pieces = enforce_input_limit(chunks, max_input_tokens("voyage", "voyage-3"))
    assert pieces[0] == chunks[0]
    assert [utf8_len(p.text) for p in pieces[1:]] == [8000, 8000, 4000]
    assert all((p.start_line, p.end_line) == (3, 5) for p in pieces[1:])


@settings(max_examples=200, deadline=None)
@given(text=st.text(max_size=300), limit=st.integers(4, 40))
def test_property_pieces_are_maximal_and_lossless(text: str, limit: int) -> None:
    pieces = split_chunk_to_byte_limit(Chunk.create(7, 8, text), limit)
    assert "".join(p.text for p in pieces) == text
    for piece, following in itertools.pairwise(pieces):
        assert piece.text
        assert utf8_len(piece.text) + utf8_len(following.text[0]) > limit
    for piece in pieces:
        assert utf8_len(piece.text) <= limit
        assert (piece.start_line, piece.end_line, piece.hash) == (7, 8, sha256_hex(piece.text))


def test_batch_groups_until_byte_budget() -> None:
    assert batch_by_bytes(["a" * 3000] * 3) == [[0, 1], [2]]
    assert batch_by_bytes(["a" * 4000, "b" * 4000, "c"]) == [[0, 1], [2]]


def test_batch_counts_utf8_bytes_not_characters() -> None:
    assert batch_by_bytes(["é" * 2000] * 3) == [[0, 1], [2]]


def test_oversized_text_gets_its_own_batch() -> None:
    assert batch_by_bytes(["a" * 100, "b" * 9000, "c" * 100]) == [[0], [1], [2]]


def test_batch_empty_input_and_custom_limit() -> None:
    assert batch_by_bytes([]) == []
    assert batch_by_bytes(["ab", "cd", "e"], max_bytes=4) == [[0, 1], [2]]


@settings(max_examples=200, deadline=None)
@given(
    sizes=st.lists(st.integers(0, 120), max_size=30),
    max_bytes=st.integers(1, 200),
)
def test_property_batches_are_greedy_and_cover_all(sizes: list[int], max_bytes: int) -> None:
    texts = ["x" * size for size in sizes]
    groups = batch_by_bytes(texts, max_bytes)
    assert [i for group in groups for i in group] == list(range(len(texts)))
    totals = [sum(sizes[i] for i in group) for group in groups]
    for group, total in zip(groups, totals, strict=True):
        assert group
        assert total <= max_bytes or len(group) == 1
    for total, following in zip(totals[:-1], groups[1:], strict=True):
        assert total + sizes[following[0]] > max_bytes
