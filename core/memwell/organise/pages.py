"""Generated pages: the part reflection owns, and the rest that stays the user's.

A generated page starts with front matter saying so (``generated: memwell reflect``), then the
owned region between :data:`BEGIN` and :data:`END`. Reflection replaces only that front matter
and that region; text a person writes above the region (after the front matter) or below it is
kept byte for byte. A page whose markers are gone is the user's now: it is left alone.
"""

from __future__ import annotations

from collections.abc import Mapping

from memwell.organise.notes import GENERATED_MARK

BEGIN = "<!-- memwell:reflect:begin (generated; edits here are replaced, write below the end) -->"
END = "<!-- memwell:reflect:end -->"


def front_matter(fields: Mapping[str, str]) -> str:
    """The front matter block of a generated page (``generated`` first, then ``fields``)."""
    lines = [GENERATED_MARK, *(f"{key}: {_yaml_scalar(value)}" for key, value in fields.items())]
    return "---\n" + "\n".join(lines) + "\n---\n"


def _yaml_scalar(value: str) -> str:
    plain = value and value == value.strip() and not any(c in value for c in ":#'\"[]{},&*!|>%@`")
    return value if plain else '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _own_front_matter_end(text: str) -> int:
    """The end of ``text``'s front matter when reflection wrote it, else 0."""
    if not text.startswith("---\n"):
        return 0
    close = text.find("\n---\n", 3)
    if close < 0 or GENERATED_MARK not in text[:close]:
        return 0
    return close + len("\n---\n")


def merge(current: str | None, head: str, body: str) -> tuple[str, int, int] | None:
    """The page with ``head`` (front matter) and the owned region holding ``body``.

    Returns ``(text, first, last)``: the new text and the lines (1-based) the region spans;
    None when ``current`` exists but its markers are gone (the page is the user's).
    """
    region = f"{BEGIN}\n{body.rstrip()}\n{END}"
    if current is None:
        text = f"{head}{region}\n"
        before = head
    else:
        start = current.find(BEGIN)
        end = current.find(END, start + 1) if start >= 0 else -1
        if start < 0 or end < 0:
            return None
        own = _own_front_matter_end(current)
        kept_head = current[own:start] if own <= start else current[:start]
        before = (head if own or not current[:start].strip() else "") + kept_head
        text = before + region + current[end + len(END) :]
    first = before.count("\n") + 1
    return text, first, first + region.count("\n")
