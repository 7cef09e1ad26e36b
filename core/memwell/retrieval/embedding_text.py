"""The text a chunk is embedded with: its own text, led by its file's title when it lacks it.

A file is cut into chunks, and only the first holds the file's title (its opening Markdown
heading); the others are embedded without knowing what the file is about. Each chunk that
starts after the title line is embedded as ``title + "\\n\\n" + text``, cut to the provider's
input limit; the stored and returned chunk text stays the verbatim slice of the file, and
keyword search never sees the title twice. :data:`EMBEDDING_TEXT_VERSION` is part of each
backend's index identity, so a change to this rule re-embeds instead of mixing two.
"""

from __future__ import annotations

from collections.abc import Sequence

from memwell.lazy_import import lazy_pattern
from memwell.retrieval.chunking import Chunk, sha256_hex
from memwell.retrieval.limits import truncate_utf8

EMBEDDING_TEXT_VERSION = "title-v1"
"""Bumped whenever the same chunks are embedded with different text."""

MAX_TITLE_CHARS = 200
"""A longer opening heading is not a title (and would crowd the chunk out of the window)."""

_ATX_HEADING = lazy_pattern(r"^ {0,3}#{1,6}[ \t]+\S")


def file_title(content: str) -> tuple[int, str] | None:
    """The 1-based line number and text of ``content``'s title: its first non-blank line when
    that is an ATX heading (``# ...`` to ``###### ...``) of at most :data:`MAX_TITLE_CHARS`
    characters; otherwise ``None``."""
    for number, line in enumerate(content.splitlines(), start=1):
        if not line.strip():
            continue
        heading = line.strip()
        if _ATX_HEADING.match(line) and len(heading) <= MAX_TITLE_CHARS:
            return number, heading
        return None
    return None


def embedding_text(chunk: Chunk, title: tuple[int, str] | None, limit_bytes: int) -> str:
    """What ``chunk`` is embedded as: its text, led by ``title`` (:func:`file_title`) when the
    chunk starts after the title's line, cut to ``limit_bytes`` UTF-8 bytes."""
    if title is None or chunk.start_line <= title[0]:
        return chunk.text
    return truncate_utf8(f"{title[1]}\n\n{chunk.text}", limit_bytes)


def embedding_texts(chunks: Sequence[Chunk], content: str, limit_bytes: int) -> list[str]:
    """:func:`embedding_text` of each of ``chunks``, cut from the file ``content``."""
    title = file_title(content)
    return [embedding_text(chunk, title, limit_bytes) for chunk in chunks]


def embedding_key(text: str) -> str:
    """The embedding cache key of an embedded ``text`` (a chunk embedded as its own text keeps
    its chunk hash as key, so caches filled before titles were added stay valid)."""
    return sha256_hex(text)
