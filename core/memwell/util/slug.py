"""Slug rules: lowercase ASCII letters and digits in hyphen-separated words, at most
:data:`MAX_SLUG_LENGTH` characters (the reference's rule for note names; entity and procedure
pages use the same).
"""

from __future__ import annotations

import re
import unicodedata

MAX_SLUG_LENGTH = 30
_NON_SLUG = re.compile(r"[^a-z0-9]+")
_SLUG = re.compile(r"[a-z0-9]+(?:-[a-z0-9]+)*")


def clean_slug(text: str) -> str:
    """``text`` as a slug: ASCII-folded, lowercase, runs of other characters as one ``-``.

    Cut to :data:`MAX_SLUG_LENGTH` characters at a hyphen when there is one; ``""`` when
    nothing usable is left (for example for Chinese-only text).
    """
    folded = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode().lower()
    slug = _NON_SLUG.sub("-", folded).strip("-")
    if len(slug) <= MAX_SLUG_LENGTH:
        return slug
    cut = slug[: MAX_SLUG_LENGTH + 1]
    hyphen = cut.rfind("-")
    return (cut[:hyphen] if hyphen > 0 else slug[:MAX_SLUG_LENGTH]).strip("-")


def is_slug(text: str) -> bool:
    """Whether ``text`` is a non-empty slug by the rules of :func:`clean_slug`."""
    return len(text) <= MAX_SLUG_LENGTH and _SLUG.fullmatch(text) is not None
