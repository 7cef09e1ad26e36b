"""Line-based Markdown chunking with a CJK-aware character budget.

A file is split into lines, long lines into *segments* (sentences, else word runs, else
fixed slices), and segments are packed into chunks of at most ``tokens * 4`` weighted
characters, with a tail of the previous chunk carried over as overlap. Each chunk keeps the
1-based line range it came from, and its text is a verbatim slice of the file.

Python strings hold code points, not UTF-16 units. The reference cuts every long line every N
UTF-16 units (mid-word, mid-sentence) and lengthens a cut by one unit rather than split a
surrogate pair; this module keeps those widths and that rule for the last resort, a single
word longer than the budget, so an astral character (emoji, CJK Ext-B) is never split.
"""

from __future__ import annotations

import hashlib
import itertools
import json
from collections import Counter
from collections.abc import Iterator, Sequence
from typing import NamedTuple

import msgspec

from memwell.util.lazy_import import lazy_pattern

CHUNKER_VERSION = 2
"""Bumped whenever the same content and settings give different chunks; backends keep it in
their index metadata, so an upgrade rebuilds indexes instead of mixing two chunkings."""

CHARS_PER_TOKEN = 4
"""Characters per token in the budget estimate."""

_MIN_MAX_CHARS = 32
# Runs, not single characters: summing run lengths is 3x faster than counting matches.
_NON_LATIN_RUN = lazy_pattern(
    "[\u2e80-\u9fff\ua000-\ua4ff\uac00-\ud7af\uf900-\ufaff\U00020000-\U0002fa1f]+"
)
_BMP_LIMIT = 0xFFFF
# Cut points inside an over-long line: after a sentence's end (Latin punctuation followed by
# whitespace, or CJK full stops), and, failing that, after each run of whitespace.
_SENTENCE_END = lazy_pattern(r"[.!?;:][\"')\]]*\s+|[\u3002\uff01\uff1f\uff1b]\s*")
_WORD_END = lazy_pattern(r"(?<=\s)(?=\S)")


def sha256_hex(text: str) -> str:
    """Return the SHA-256 hex digest of ``text`` encoded as UTF-8."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


class Chunk(msgspec.Struct, frozen=True):
    """A slice of a source file: 1-based inclusive line range, text and ``sha256_hex(text)``."""

    start_line: int
    end_line: int
    text: str
    hash: str

    @classmethod
    def create(cls, start_line: int, end_line: int, text: str) -> Chunk:
        """Build a chunk, computing its hash from ``text``."""
        return cls(start_line, end_line, text, sha256_hex(text))


class _Segment(NamedTuple):
    line_no: int
    text: str
    size: int


def estimate_chars(text: str) -> int:
    """Weighted length: code points, plus 3 for each CJK-class character (about 1 token each).

    The class is ``[U+2E80-U+9FFF U+A000-U+A4FF U+AC00-U+D7AF U+F900-U+FAFF U+20000-U+2FA1F]``.
    """
    if text.isascii():
        return len(text)
    return len(text) + (CHARS_PER_TOKEN - 1) * sum(map(len, _NON_LATIN_RUN.findall(text)))


def _utf16_len(text: str) -> int:
    """UTF-16 code units of ``text`` (a lone surrogate counts one, like any BMP code point)."""
    if text.isascii():
        return len(text)
    return len(text.encode("utf-16-le", "surrogatepass")) // 2


def _utf16_slices(text: str, units: int) -> list[str]:
    """Cut ``text`` every ``units`` UTF-16 units, lengthening a cut rather than split a pair."""
    pieces: list[str] = []
    start = 0
    width = 0
    for index, char in enumerate(text):
        width += 2 if ord(char) > _BMP_LIMIT else 1
        if width >= units:
            pieces.append(text[start : index + 1])
            start, width = index + 1, 0
    if start < len(text):
        pieces.append(text[start:])
    return pieces


def _hard_slices(piece: str, max_chars: int, tokens: int) -> list[str]:
    """Cut ``piece`` every ``max_chars`` UTF-16 units; re-slice CJK-heavy ones by ``tokens``."""
    segments: list[str] = []
    for part in _utf16_slices(piece, max_chars):
        if estimate_chars(part) > max_chars:
            segments.extend(_utf16_slices(part, tokens))
        else:
            segments.append(part)
    return segments


def _fits(text: str, max_chars: int) -> bool:
    return estimate_chars(text) <= max_chars and _utf16_len(text) <= max_chars


def _pack(pieces: Iterator[str], max_chars: int) -> Iterator[str]:
    """Concatenate consecutive ``pieces`` while the result fits ``max_chars``.

    Both measures are additive, so each piece is measured once (linear in the line).
    """
    current: list[str] = []
    weight = units = 0
    for piece in pieces:
        piece_weight, piece_units = estimate_chars(piece), _utf16_len(piece)
        if current and max(weight + piece_weight, units + piece_units) > max_chars:
            yield "".join(current)
            current, weight, units = [], 0, 0
        current.append(piece)
        weight, units = weight + piece_weight, units + piece_units
    if current:
        yield "".join(current)


def _sentences(line: str) -> Iterator[str]:
    """The sentences of ``line``, each with its trailing punctuation and whitespace."""
    start = 0
    for end in _SENTENCE_END.finditer(line):
        yield line[start : end.end()]
        start = end.end()
    if start < len(line):
        yield line[start:]


def _line_segments(line: str, max_chars: int, tokens: int) -> list[tuple[str, int]]:
    """Split one line into segments that fit ``max_chars``, at the most natural boundary.

    A line that fits is one segment. A longer one (a prose paragraph is often a single line)
    is cut after sentences; a sentence that does not fit is cut after words (runs of words
    packed up to the budget), and only a word that does not fit is cut every ``max_chars``
    UTF-16 units (CJK-heavy slices every ``tokens`` units). The segments concatenate back to
    the line exactly; each comes with its :func:`estimate_chars`.
    """
    weight = estimate_chars(line)
    if weight <= max_chars and _utf16_len(line) <= max_chars:
        return [(line, weight)]  # most lines: measured once
    segments: list[str] = []
    for sentence in _sentences(line):
        if _fits(sentence, max_chars):
            segments.append(sentence)
            continue
        words = (w for w in _WORD_END.split(sentence) if w)
        for run in _pack(words, max_chars):
            segments.extend(
                [run] if _fits(run, max_chars) else _hard_slices(run, max_chars, tokens)
            )
    return [(segment, estimate_chars(segment)) for segment in segments]


def _segments(content: str, max_chars: int, tokens: int) -> Iterator[_Segment]:
    """Yield every segment of ``content`` with its 1-based line number and weighted size."""
    for line_no, raw_line in enumerate(content.split("\n"), start=1):
        line = raw_line.removesuffix("\r")
        for text, weight in _line_segments(line, max_chars, tokens):
            yield _Segment(line_no, text, weight + 1)


def _flush(segments: Sequence[_Segment]) -> Chunk:
    """Join segments into a chunk: pieces of one line directly, lines with a newline."""
    parts = [segments[0].text]
    for previous, segment in itertools.pairwise(segments):
        parts.append(segment.text if segment.line_no == previous.line_no else "\n" + segment.text)
    return Chunk.create(segments[0].line_no, segments[-1].line_no, "".join(parts))


def _carry_overlap(segments: Sequence[_Segment], overlap_chars: int) -> list[_Segment]:
    """Keep the trailing segments whose sizes first reach ``overlap_chars`` (at least one)."""
    if overlap_chars <= 0:
        return []
    kept: list[_Segment] = []
    carried = 0
    for segment in reversed(segments):
        kept.append(segment)
        carried += segment.size
        if carried >= overlap_chars:
            break
    kept.reverse()
    return kept


def chunk_markdown(content: str, *, tokens: int = 400, overlap: int = 80) -> list[Chunk]:
    """Split ``content`` into line-ranged chunks of about ``tokens`` tokens with ``overlap``.

    ``maxChars = max(32, tokens * 4)``; ``overlap`` is clamped to ``[0, tokens - 1]`` and
    ``overlapChars = overlap * 4``. A line longer than ``maxChars`` is cut into segments
    after sentences, else after words, else every ``maxChars`` UTF-16 units (CJK-heavy slices
    every ``tokens`` units), so every segment weighs at most ``maxChars``. A segment of size
    ``estimate_chars + 1`` that would push the chunk past ``maxChars`` flushes it; the next
    chunk starts with the previous one's trailing segments (at least ``overlapChars`` of
    them, dropped from the front as far as needed for the new segment to fit the budget).

    A chunk's weighted size (sum of ``estimate_chars(segment) + 1``) is therefore at most
    ``maxChars + 1``, so it fits a model window of ``tokens``; the reference lets overlap grow
    a chunk to ``2 * maxChars + overlapChars``, past the window, where the model truncates it.
    Chunk text is the source text: segments of one line joined as they were, lines joined by
    ``\\n``. Whitespace-only chunks are dropped. A trailing ``\\r`` is stripped from every
    line. Raises ``ValueError`` if ``tokens < 1``.
    """
    if tokens < 1:
        raise ValueError(f"tokens must be at least 1, got {tokens}")
    max_chars = max(_MIN_MAX_CHARS, tokens * CHARS_PER_TOKEN)
    overlap_chars = min(max(overlap, 0), tokens - 1) * CHARS_PER_TOKEN
    chunks: list[Chunk] = []
    current: list[_Segment] = []
    current_chars = 0
    for segment in _segments(content, max_chars, tokens):
        if current and current_chars + segment.size > max_chars:
            chunks.append(_flush(current))
            current = _carry_overlap(current, overlap_chars)
            current_chars = sum(kept.size for kept in current)
            while current and current_chars + segment.size > max_chars:
                current_chars -= current.pop(0).size
        current.append(segment)
        current_chars += segment.size
    if current:
        chunks.append(_flush(current))
    return [chunk for chunk in chunks if chunk.text.strip()]


def chunk_ids(source: str, path: str, chunks: Sequence[Chunk], model: str) -> list[str]:
    """Stable ids of one file's chunks, unique by construction.

    An id hashes the source, path, line range, content hash and model, plus how many earlier
    chunks of the file share that range and text: a long run of one character or word on one
    line gives several identical chunks, and each still gets an id of its own. Ids of
    different files differ by their (source, path), encoded unambiguously.
    """
    earlier: Counter[tuple[int, int, str]] = Counter()
    ids: list[str] = []
    for chunk in chunks:
        key = (chunk.start_line, chunk.end_line, chunk.hash)
        ids.append(sha256_hex(json.dumps([source, path, *key, earlier[key], model])))
        earlier[key] += 1
    return ids


def remap_lines(chunks: Sequence[Chunk], line_map: Sequence[int]) -> list[Chunk]:
    """Replace each chunk's start and end line by ``line_map[line - 1]`` (session transcripts).

    An empty map keeps the lines. A line past the end of the map (for example the empty line
    after a trailing newline) maps to the last entry.
    """
    if not line_map:
        return list(chunks)
    last = len(line_map) - 1

    def mapped(line: int) -> int:
        return line_map[min(line - 1, last)]

    return [
        msgspec.structs.replace(
            chunk, start_line=mapped(chunk.start_line), end_line=mapped(chunk.end_line)
        )
        for chunk in chunks
    ]
