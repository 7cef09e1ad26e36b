"""The text a chunk is embedded with: the file's title leads each chunk that lacks it."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st
from memwell.retrieval.chunking import Chunk, chunk_markdown
from memwell.retrieval.embedding_text import (
    MAX_TITLE_CHARS,
    embedding_key,
    embedding_text,
    embedding_texts,
    file_title,
)
from memwell.retrieval.limits import truncate_utf8

DOC = "# Dendrite growth\n\n" + "\n".join(f"Sentence {i} about arbor geometry." for i in range(60))


def test_the_title_is_the_opening_heading() -> None:
    assert file_title("\n\n## 2023-05-08 session 1\nAlice: hi\n") == (3, "## 2023-05-08 session 1")
    assert file_title("Some text\n# Later heading\n") is None, "only an opening heading"
    assert file_title("#hashtag, not a heading\n") is None
    assert file_title("") is None
    assert file_title("# " + "x" * MAX_TITLE_CHARS) is None, "too long for a title"


def test_later_chunks_are_led_by_the_title_and_the_first_is_unchanged() -> None:
    chunks = chunk_markdown(DOC, tokens=64, overlap=8)
    assert len(chunks) > 2
    texts = embedding_texts(chunks, DOC, 4096)
    assert texts[0] == chunks[0].text, "the first chunk holds the title already"
    for chunk, text in zip(chunks[1:], texts[1:], strict=True):
        assert text == f"# Dendrite growth\n\n{chunk.text}"
    assert embedding_key(texts[0]) == chunks[0].hash, "unprefixed chunks keep their cache key"
    assert embedding_key(texts[1]) != chunks[1].hash


def test_an_untitled_file_is_embedded_as_its_chunks() -> None:
    content = "plain note\n" * 200
    chunks = chunk_markdown(content, tokens=32, overlap=4)
    assert embedding_texts(chunks, content, 4096) == [c.text for c in chunks]


def test_the_led_text_fits_the_input_limit() -> None:
    chunk = Chunk.create(5, 9, "é" * 100)
    text = embedding_text(chunk, (1, "# Ünïcode title"), 64)
    assert len(text.encode("utf-8")) <= 64
    assert text.startswith("# Ünïcode title\n\n")


@given(st.text(), st.integers(min_value=0, max_value=64))
def test_truncate_utf8_is_a_prefix_within_the_limit(text: str, limit: int) -> None:
    cut = truncate_utf8(text, limit)
    assert text.startswith(cut)
    assert len(cut.encode("utf-8")) <= limit
    if len(text.encode("utf-8")) <= limit:
        assert cut == text
    else:  # as long as possible: one more character would not fit
        assert len(text[: len(cut) + 1].encode("utf-8")) > limit
