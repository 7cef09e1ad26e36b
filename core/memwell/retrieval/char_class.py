"""Character classes tested by binary search over their ranges, without compiling a regex.

Compiling a class over the CJK blocks costs the ``re`` module 1-4 ms (it marks each of the
class's ~50,000 BMP code points in a table, in Python), as much as a whole warm keyword search.
A one-shot search or a recall recording looks at a few dozen characters, so a
:class:`CharClass` answers short texts by bisecting the class's code-point ranges, and uses the
compiled pattern for long ones (such as documents being indexed) and for every text once the
class has scanned a few thousand characters (the regex is faster per character). Both give the
same answers.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Callable, Iterator

from memwell.util.lazy_import import is_compiled, lazy_pattern

#: Texts up to this many characters are scanned in Python ...
SCAN_LIMIT = 128
#: ... until this many have been scanned in all (about the cost of compiling the regex).
SCAN_BUDGET = 8192


def _ranges(body: str) -> list[tuple[int, int]]:
    """The sorted, merged code-point ranges of a regex class body of literal characters and
    ``a-b`` ranges (no escapes, no leading ``^``)."""
    ranges: list[tuple[int, int]] = []
    i = 0
    while i < len(body):
        if i + 2 < len(body) and body[i + 1] == "-":
            ranges.append((ord(body[i]), ord(body[i + 2])))
            i += 3
        else:
            ranges.append((ord(body[i]), ord(body[i])))
            i += 1
    merged: list[tuple[int, int]] = []
    for lo, hi in sorted(ranges):
        if merged and lo <= merged[-1][1] + 1:
            merged[-1] = (merged[-1][0], max(hi, merged[-1][1]))
        else:
            merged.append((lo, hi))
    return merged


class CharClass:
    """The characters of the regex class ``[body]``: membership, presence and runs."""

    def __init__(self, body: str) -> None:
        ranges = _ranges(body)
        self._starts = [lo for lo, _ in ranges]
        self._ends = [hi for _, hi in ranges]
        self._lowest = chr(self._starts[0]) if ranges else "\U0010ffff"
        self._run = lazy_pattern(f"[{body}]+")
        self._scanned = 0

    def __contains__(self, char: object) -> bool:
        """Whether ``char`` is one character of the class."""
        if not isinstance(char, str) or len(char) != 1 or char < self._lowest:
            return False
        code = ord(char)
        index = bisect_right(self._starts, code) - 1
        return index >= 0 and code <= self._ends[index]

    def _by_regex(self, text: str) -> bool:
        if len(text) > SCAN_LIMIT or self._scanned > SCAN_BUDGET or is_compiled(self._run):
            return True
        self._scanned += len(text)
        return False

    def found_in(self, text: str) -> bool:
        """Whether any character of ``text`` is in the class."""
        if self._by_regex(text):
            return self._run.search(text) is not None
        return any(map(self.__contains__, text))

    def runs(self, text: str) -> Iterator[tuple[int, int]]:
        """``(start, end)`` of each maximal run of the class's characters in ``text``."""
        if self._by_regex(text):
            for match in self._run.finditer(text):
                yield match.span()
            return
        starts, ends, lowest = self._starts, self._ends, self._lowest
        start = -1
        for index, char in enumerate(text):
            # char >= lowest: the bisection finds a range starting at or below it
            if char >= lowest and ord(char) <= ends[bisect_right(starts, ord(char)) - 1]:
                if start < 0:
                    start = index
            elif start >= 0:
                yield start, index
                start = -1
        if start >= 0:
            yield start, len(text)

    def blank(self, text: str) -> str:
        """``text`` with each maximal run of the class's characters replaced by a space (by
        the regex alone, with no call per run, once it is compiled)."""
        if self._by_regex(text):
            return self._run.sub(" ", text)
        return self.sub(text, _space)

    def sub(self, text: str, render: Callable[[str], str]) -> str:
        """``text`` with each maximal run of the class's characters replaced by
        ``render(run)``."""
        if self._by_regex(text):
            return self._run.sub(lambda match: render(match[0]), text)
        parts: list[str] = []
        end = 0
        for start, stop in self.runs(text):
            parts += (text[end:start], render(text[start:stop]))
            end = stop
        parts.append(text[end:])
        return "".join(parts)


def _space(run: str) -> str:
    return " "
