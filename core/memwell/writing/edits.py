"""Pure text edits behind the writer: append, insert under a heading, replace one passage.

Each edit takes the file's text (decoded with ``surrogateescape``, so undecodable bytes survive
the round trip) and returns the new text with the 1-based line range the note occupies. Only
the inserted text and the separators it needs (a final newline, one blank line) are added;
every other character, the BOM, front matter and the line endings stay as they were. Notes
use the file's line ending: a CRLF file gets CRLF lines. A note never opens a block it
does not close: a code fence left open at its end is closed on a line of its own, so the rest
of the file stays Markdown and its headings stay headings.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from memwell.contract.errors import WriteRefusedError

_ATX_HEADING = re.compile(r"^ {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$")
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_LIST_ITEM = re.compile(r"^( {0,3})([-*+]|[0-9]{1,9}[.)])(?:[ \t]|\r?\n|$)")
_FRONT_MATTER_END = ("---", "...")
DEFAULT_HEADING_LEVEL = 2


@dataclass(frozen=True)
class Edit:
    """The edited text and the lines (1-based, inclusive) the written text occupies."""

    text: str
    start_line: int
    end_line: int


def newline_of(text: str) -> str:
    """The file's line ending: that of its first line (``\\n`` for a file without one)."""
    first = text.find("\n")
    return "\r\n" if first > 0 and text[first - 1] == "\r" else "\n"


def as_block(note: str, newline: str) -> str:
    """``note`` without leading blank lines and trailing whitespace, in ``newline`` endings,
    with a code fence it leaves open closed."""
    lines = note.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    while lines and not lines[0].strip():
        del lines[0]
    block = "\n".join(lines).rstrip()
    _, fence = _scan(_lines(block))
    if fence is not None:
        block += "\n" + fence[1]
    return block.replace("\n", newline)


def _lines(text: str) -> list[str]:
    """``text`` split after every ``\\n`` only (``str.splitlines`` also splits on ``\\r``)."""
    parts = text.split("\n")
    return [part + "\n" for part in parts[:-1]] + ([parts[-1]] if parts[-1] else [])


def _is_blank(line: str) -> bool:
    return not line.strip()


def _span(start_line: int, block: str) -> tuple[int, int]:
    return start_line, start_line + block.count("\n")


def append(text: str, note: str) -> Edit:
    """Append ``note`` at the end, after one blank line."""
    newline = newline_of(text)
    block = as_block(note, newline)
    prefix = text
    if prefix and not prefix.endswith("\n"):
        prefix += newline
    lines = _lines(prefix)
    if lines and not _is_blank(lines[-1]):
        prefix += newline
    start, end = _span(prefix.count("\n") + 1, block)
    return Edit(prefix + block + newline, start, end)


def _heading_title(heading: str) -> tuple[str, int | None]:
    """The title and level (``None``: not given) of ``heading``, a title or an ATX heading.

    A bare title is read as the heading line it would become (``x #`` is titled ``x``), so the
    section it creates is the one the next write finds.
    """
    match = _ATX_HEADING.match(heading.strip())
    if match is not None:
        return (match.group(2) or "").strip(), len(match.group(1))
    as_line = _ATX_HEADING.match(f"# {heading.strip()}")
    return ((as_line.group(2) or "") if as_line else heading).strip(), None


def _normalise(title: str) -> str:
    return " ".join(title.split()).casefold()


def _scan(lines: list[str]) -> tuple[list[tuple[int, int, str]], tuple[int, str] | None]:
    """The ATX headings outside front matter and code fences, ``(line index, level, title)``
    each, and the fence still open at the end (``(line index, marker)``), if any."""
    found: list[tuple[int, int, str]] = []
    index = 0
    if lines and lines[0].lstrip("\ufeff").rstrip() == "---":
        for end in range(1, len(lines)):
            if lines[end].rstrip() in _FRONT_MATTER_END:
                index = end + 1
                break
    fence: tuple[int, str] | None = None
    for number in range(index, len(lines)):
        line = lines[number].rstrip("\r\n").lstrip("\ufeff")
        opener = _FENCE.match(line)
        if fence is not None:
            marker = fence[1]
            if (
                opener
                and opener.group(1)[0] == marker[0]
                and len(opener.group(1)) >= len(marker)
                and not line.strip()[len(opener.group(1)) :].strip()
            ):
                fence = None
            continue
        if opener:
            fence = (number, opener.group(1))
            continue
        match = _ATX_HEADING.match(line)
        if match:
            found.append((number, len(match.group(1)), (match.group(2) or "").strip()))
    return found, fence


def _list_item_form(body: list[str]) -> str | None:
    """The marker (with its indent) of the next item when ``body`` ends in a list, else None.

    A list's items keep their marker: ``-``, ``*`` or ``+``, or the next number after an
    ordered item (``3.`` after ``2.``). The list is the section's last block of non-blank lines.
    """
    first = len(body)
    while first > 0 and not _is_blank(body[first - 1]):
        first -= 1
    block = body[first:]
    opener = _LIST_ITEM.match(block[0]) if block else None
    if opener is None:
        return None
    indent = opener.group(1)
    items = [m for m in map(_LIST_ITEM.match, block) if m is not None and m.group(1) == indent]
    marker = items[-1].group(2)
    if marker[0].isdigit():
        marker = f"{int(marker[:-1]) + 1}{marker[-1]}"
    return indent + marker


def _as_item(block: str, marker: str, newline: str) -> str:
    """``block`` as a list item: ``marker`` before its first line, the rest indented under it."""
    if _LIST_ITEM.match(block) is not None:
        return block  # written as an item already
    pad = " " * (len(marker) + 1)
    rest = [pad + line if line.strip() else line for line in block.split(newline)[1:]]
    return newline.join([f"{marker} {block.split(newline)[0]}", *rest])


def append_under_heading(text: str, heading: str, note: str) -> tuple[Edit, bool]:
    """Add ``note`` at the end of the section titled ``heading``; ``True`` if it was created.

    ``heading`` is a title (``Decisions``) or an ATX heading (``### Decisions``); titles match
    case-insensitively, the first section wins, and its end is the next heading of the same
    or a higher level. A missing heading is appended as a level-2 section (or the level given),
    after a line closing a code fence the file leaves open. A section that ends in a list gets
    the note as its next item, with the list's marker.

    :raises WriteRefusedError: the heading is blank, or the note holds a heading that would
        end the section.
    """
    title, level = _heading_title(heading)
    if not title:
        raise WriteRefusedError("heading is blank", reason="blank")
    lines = _lines(text)
    headings, open_fence = _scan(lines)
    wanted = _normalise(title)
    found = next((h for h in headings if _normalise(h[2]) == wanted), None)
    newline = newline_of(text)
    _check_note_headings(note, found[1] if found else level or DEFAULT_HEADING_LEVEL, title)
    if found is None:
        # A fence the file leaves open would swallow the new section: close it first (an
        # unclosed fence ends at the end of the document anyway).
        if open_fence is not None:
            text += ("" if text.endswith("\n") else newline) + open_fence[1] + newline
        marks = "#" * (level or DEFAULT_HEADING_LEVEL)
        body = as_block(note, "\n")
        section = append(text, f"{marks} {title}\n\n{body}")
        return Edit(section.text, section.start_line + 2, section.end_line), True
    number, found_level, _ = found
    stop = next((h[0] for h in headings if h[0] > number and h[1] <= found_level), len(lines))
    insert_at = stop
    while insert_at > number + 1 and _is_blank(lines[insert_at - 1]):
        insert_at -= 1
    before = "".join(lines[:insert_at])
    after = "".join(lines[insert_at:])
    if not before.endswith("\n"):
        before += newline
    item = _list_item_form(lines[number + 1 : insert_at])
    if item is not None:  # the section ends in a list: the note is its next item
        block = _as_item(as_block(note, newline), item, newline)
        start, end = _span(before.count("\n") + 1, block)
        return Edit(before + block + newline + after, start, end), False
    block = as_block(note, newline)
    separated = newline + block + newline
    if after and not _is_blank(lines[insert_at]):
        separated += newline
    start, end = _span(before.count("\n") + 2, block)
    return Edit(before + separated + after, start, end), False


def _check_note_headings(note: str, level: int, title: str) -> None:
    """Refuse a note whose own heading would end the section it is written into."""
    headings, _ = _scan(_lines(as_block(note, "\n")))
    ending = next((h for h in headings if h[1] <= level), None)
    if ending is not None:
        raise WriteRefusedError(
            f"the note's heading {ending[2]!r} (level {ending[1]}) would end the section "
            f"{title!r} (level {level}); use a deeper heading or write it without --heading",
            reason="invalid",
        )


def replace_once(text: str, old: str, new: str) -> Edit:
    """Replace the single occurrence of ``old`` with ``new``.

    ``old`` is matched exactly; in a CRLF file, an ``old`` written with ``\\n`` that is not
    found as it is matches its CRLF form, and a ``new`` written with ``\\n`` gets CRLF lines.

    :raises WriteRefusedError: ``old`` is empty, missing, or occurs more than once
        (overlapping occurrences count).
    """
    if not old:
        raise WriteRefusedError("the text to replace is empty", reason="blank")
    crlf = newline_of(text) == "\r\n"
    if crlf and "\r" not in new:
        new = new.replace("\n", "\r\n")
    first = text.find(old)
    if first < 0 and crlf and "\r" not in old:
        old = old.replace("\n", "\r\n")
        first = text.find(old)
    if first < 0:
        raise WriteRefusedError("the text to replace was not found", reason="not_found")
    if text.find(old, first + 1) >= 0:
        raise WriteRefusedError(
            "the text to replace occurs more than once; pass a longer, unique passage",
            reason="not_unique",
        )
    start, end = _span(text.count("\n", 0, first) + 1, new.rstrip("\r\n"))
    return Edit(text[:first] + new + text[first + len(old) :], start, end)
