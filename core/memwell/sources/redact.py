"""Mask secrets (API keys, tokens, passwords, private keys) in text before it is indexed.

Tokens shorter than 18 characters become ``***``; longer ones keep their first 6 and last 4
characters around ``…``. Private-key PEM blocks keep only their BEGIN and END markers. All
patterns are case-insensitive. :func:`redact` is idempotent: a value that already has the
masked shape (``***`` or 6 characters, ``…``, 4 characters) is left as it is, and the patterns
are re-applied until nothing changes, because masking one match can expose another.
"""

from __future__ import annotations

import re

_MIN_VISIBLE_LENGTH = 18
_KEEP_START = 6
_KEEP_END = 4
_ELLIPSIS = "…"
_PEM_PLACEHOLDER = "…redacted…"
_MAX_PASSES = 8

_WORD = "A-Za-z0-9_"
_WORD_START = rf"(?<![{_WORD}])"
_BEARER_CHARS = r"A-Za-z0-9._\-+="
_MASKED = re.compile(rf"\*\*\*|.{{{_KEEP_START}}}{_ELLIPSIS}.{{{_KEEP_END}}}", re.DOTALL)


def _prefixed(prefix: str, body: str, min_len: int) -> str:
    return rf"{_WORD_START}(?P<tok>{prefix}[{body}]{{{min_len},}})"


_PATTERNS = tuple(
    re.compile(pattern, re.IGNORECASE)
    for pattern in (
        # ENV-style assignments: FOO_API_KEY=value, password: "value".
        rf"{_WORD_START}[A-Z0-9_]*(?:KEY|TOKEN|SECRET|PASSWORD|PASSWD)(?![{_WORD}])"
        r"\s*[=:]\s*(?P<q>[\"']?)(?P<tok>[^\s\"'\\]+)(?P=q)",
        # JSON fields.
        r"\"(?:apiKey|token|secret|password|passwd|accessToken|refreshToken)\"\s*:\s*"
        r"\"(?P<tok>[^\"]+)\"",
        # CLI flags.
        r"--(?:api[-_]?key|token|secret|password|passwd)\s+(?P<q>[\"']?)(?P<tok>[^\s\"']+)(?P=q)",
        # Authorization headers; the first alternative recognises an already masked token.
        rf"Authorization\s*[:=]\s*Bearer\s+(?P<tok>[{_BEARER_CHARS}]{{{_KEEP_START}}}"
        rf"{_ELLIPSIS}[{_BEARER_CHARS}]{{{_KEEP_END}}}(?![{_BEARER_CHARS}])|[{_BEARER_CHARS}]+)",
        rf"{_WORD_START}Bearer\s+(?P<tok>[{_BEARER_CHARS}]{{18,}})",
        # Well-known token prefixes.
        _prefixed("sk-", r"A-Za-z0-9_\-", 8),
        _prefixed("ghp_", "A-Za-z0-9", 20),
        _prefixed("github_pat_", "A-Za-z0-9_", 20),
        _prefixed("xox[baprs]-", r"A-Za-z0-9\-", 10),
        _prefixed("xapp-", r"A-Za-z0-9\-", 10),
        _prefixed("gsk_", r"A-Za-z0-9_\-", 10),
        _prefixed("AIza", r"A-Za-z0-9_\-", 20),
        _prefixed("pplx-", r"A-Za-z0-9_\-", 10),
        _prefixed("npm_", "A-Za-z0-9", 10),
        # Telegram bot tokens.
        _prefixed("[0-9]{6,}:", r"A-Za-z0-9_\-", 20),
    )
)

_PEM_BEGIN = re.compile(r"-----BEGIN [A-Z ]*PRIVATE KEY-----", re.IGNORECASE)
_PEM_END = re.compile(r"-----END [A-Z ]*PRIVATE KEY-----", re.IGNORECASE)


def _mask(token: str) -> str:
    if _MASKED.fullmatch(token):
        return token
    if len(token) < _MIN_VISIBLE_LENGTH:
        return "***"
    return f"{token[:_KEEP_START]}{_ELLIPSIS}{token[-_KEEP_END:]}"


def _mask_match(match: re.Match[str]) -> str:
    whole, offset = match.group(0), match.start()
    start, end = match.start("tok") - offset, match.end("tok") - offset
    return f"{whole[:start]}{_mask(match.group('tok'))}{whole[end:]}"


def _redact_pem(text: str) -> str:
    """Collapse each private-key block to its markers; linear even with unterminated blocks."""
    parts: list[str] = []
    position = 0
    while begin := _PEM_BEGIN.search(text, position):
        end = _PEM_END.search(text, begin.end() + 1)
        if end is None:
            break
        separator = "\n" if "\n" in text[begin.start() : end.end()] else " "
        parts += [text[position : begin.start()], begin.group(0), separator]
        parts += [_PEM_PLACEHOLDER, separator, end.group(0)]
        position = end.end()
    parts.append(text[position:])
    return "".join(parts)


def _redact_pass(text: str) -> str:
    redacted = _redact_pem(text)
    for pattern in _PATTERNS:
        redacted = pattern.sub(_mask_match, redacted)
    return redacted


def redact(text: str) -> str:
    """Return ``text`` with every default secret pattern masked (idempotent)."""
    current = text
    for _ in range(_MAX_PASSES):
        redacted = _redact_pass(current)
        if redacted == current:
            break
        current = redacted
    return current
