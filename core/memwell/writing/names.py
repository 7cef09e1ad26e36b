"""What a written file name and a heading may hold.

A heading is one line of Markdown and a file name is one path on every platform, so both are
refused when they hold a control character (newline, tab, DEL...), a line or paragraph
separator or a bidirectional control (``U+202E`` right-to-left override...), which could
restructure the file or disguise the name. A file name is also refused when a component is
a name Windows reserves (``CON``, ``NUL``, ``COM1``...), when a component is too long for
the filesystem with the writer's temporary suffix, or when it looks like it holds a secret
(the error shows it masked): file names are indexed and shown, and are never redacted.
"""

from __future__ import annotations

import unicodedata

from memwell.contract.errors import PathNotAllowedError
from memwell.sources.redact import redact
from memwell.writing.atomic import TEMP_NAME_EXTRA_BYTES

_BIDI_CONTROLS = frozenset(
    "\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"
)
_BREAKING_CATEGORIES = frozenset({"Cc", "Zl", "Zp"})
_WINDOWS_RESERVED = frozenset(
    ["CON", "PRN", "AUX", "NUL"]
    + [f"{device}{number}" for device in ("COM", "LPT") for number in range(1, 10)]
)
NAME_MAX_BYTES = 255
"""The longest file name component (bytes) of the filesystems memwell writes to."""


def unsafe_character(text: str) -> str | None:
    """The first control, line-breaking or bidi character of ``text``, described; else None."""
    for char in text:
        if char in _BIDI_CONTROLS or unicodedata.category(char) in _BREAKING_CATEGORIES:
            name = unicodedata.name(char, "control character")
            return f"U+{ord(char):04X} {name}"
    return None


def check_file_name(name: str) -> None:
    """Refuse a write target name that is unsafe, reserved, too long or holds a secret.

    :raises PathNotAllowedError: saying which rule the name breaks.
    """
    unsafe = unsafe_character(name)
    if unsafe is not None:
        raise PathNotAllowedError(
            f"path not allowed: the name contains {unsafe}; control, line-break and "
            "bidirectional characters are refused in file names"
        )
    masked = redact(name)
    if masked != name:
        raise PathNotAllowedError(
            f"path not allowed: the name looks like a secret ({masked}); file names are "
            "indexed and shown unredacted, so choose a name without it"
        )
    limit = NAME_MAX_BYTES - TEMP_NAME_EXTRA_BYTES
    for part in name.replace("\\", "/").split("/"):
        if part.split(".", 1)[0].strip().upper() in _WINDOWS_RESERVED:
            raise PathNotAllowedError(
                f"path not allowed: {part!r} is a device name Windows reserves; choose another name"
            )
        size = len(part.encode("utf-8", "surrogateescape"))
        if size > limit:
            raise PathNotAllowedError(
                f"path not allowed: a file or directory name is {size} bytes; "
                f"the limit is {limit} bytes"
            )
