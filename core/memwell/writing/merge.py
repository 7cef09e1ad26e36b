"""Three-way line merge, for an editor's change that landed while the writer replaced a file.

:func:`union_merge` applies both sides' changes to their common base. Changes to different
lines merge as in any three-way merge; where both sides changed the same lines, both versions
are kept, ours first (git's ``union`` merge), so no line either side wrote is lost.
"""

from __future__ import annotations

from difflib import SequenceMatcher

_Hunk = tuple[int, int, list[bytes]]


def _lines(data: bytes) -> list[bytes]:
    """``data`` split after every ``\\n`` only (each line keeps its ending)."""
    parts = data.split(b"\n")
    return [part + b"\n" for part in parts[:-1]] + ([parts[-1]] if parts[-1] else [])


def _common_ends(a: list[bytes], b: list[bytes]) -> tuple[int, int]:
    """How many lines ``a`` and ``b`` share at the start, then at the end (not overlapping)."""
    prefix = 0
    while prefix < min(len(a), len(b)) and a[prefix] == b[prefix]:
        prefix += 1
    suffix = 0
    while suffix < min(len(a), len(b)) - prefix and a[-1 - suffix] == b[-1 - suffix]:
        suffix += 1
    return prefix, suffix


def _hunks(base: list[bytes], side: list[bytes]) -> list[_Hunk]:
    """``(start, end, replacement)``: base lines ``start:end`` became ``replacement``.

    The lines both share at either end are set aside first (as git's diff does), so a block
    inserted among repeated lines is one insertion where it was made, not a longest match
    that pairs it with a neighbouring line and deletes another.
    """
    prefix, suffix = _common_ends(base, side)
    matcher = SequenceMatcher(
        None, base[prefix : len(base) - suffix], side[prefix : len(side) - suffix], autojunk=False
    )
    return [
        (prefix + i1, prefix + i2, side[prefix + j1 : prefix + j2])
        for tag, i1, i2, j1, j2 in matcher.get_opcodes()
        if tag != "equal"
    ]


def _applied(base: list[bytes], start: int, end: int, hunks: list[_Hunk]) -> list[bytes]:
    """Base lines ``start:end`` with ``hunks`` (all inside that range) applied."""
    out: list[bytes] = []
    cursor = start
    for h_start, h_end, replacement in hunks:
        out += base[cursor:h_start] + replacement
        cursor = h_end
    return out + base[cursor:end]


def _union(ours: list[bytes], theirs: list[bytes]) -> list[bytes]:
    """Both versions of one region, ours first, the lines they share at either end once."""
    prefix, suffix = _common_ends(ours, theirs)
    return (
        ours[: len(ours) - suffix]
        + theirs[prefix : len(theirs) - suffix]
        + ours[len(ours) - suffix :]
    )


def union_merge(base: bytes, ours: bytes, theirs: bytes) -> bytes:
    """``base`` with the changes of both ``ours`` and ``theirs``; overlapping ones both kept."""
    lines = _lines(base)
    tagged = sorted(
        [(*hunk, 0) for hunk in _hunks(lines, _lines(ours))]
        + [(*hunk, 1) for hunk in _hunks(lines, _lines(theirs))],
        key=lambda hunk: (hunk[0], hunk[1], hunk[3]),
    )
    out: list[bytes] = []
    cursor = 0
    index = 0
    while index < len(tagged):
        start, end = tagged[index][0], tagged[index][1]
        group = [tagged[index]]
        index += 1
        # overlapping hunks, and both sides' insertions at one point, are one region
        while index < len(tagged) and (
            tagged[index][0] < end or (start == end and tagged[index][:2] == (start, end))
        ):
            end = max(end, tagged[index][1])
            group.append(tagged[index])
            index += 1
        out += lines[cursor:start]
        versions = [
            _applied(lines, start, end, [(s, e, r) for s, e, r, side in group if side == which])
            for which in (0, 1)
            if any(side == which for *_, side in group)
        ]
        out += versions[0] if len(versions) == 1 else _union(*versions)
        cursor = end
    return b"".join(out + lines[cursor:])
