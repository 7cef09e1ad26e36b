"""Mask secrets (API keys, tokens, passwords, private keys) in text before it is indexed.

Tokens shorter than 18 characters become ``***``; longer ones keep their first 6 and last 4
characters around ``…``. Passwords (in URLs, connection strings and "my password is …"
phrasing) always become ``***``. Private-key PEM blocks keep only their BEGIN and END markers.
Patterns are case-insensitive, except AWS access key ids, whose upper-case shape is what tells
them from words. :func:`redact` is idempotent: a value that already has the masked shape
(``***`` or 6 characters, ``…``, 4 characters) is left as it is, and the patterns are
re-applied until nothing changes, because masking one match can expose another.

Families (the table :data:`SECRET_KINDS` names each): ENV-style assignments, JSON fields and
CLI flags named like a key, token, secret or password; ``Authorization: Bearer|Basic|Token``
credentials and bare ``Bearer`` tokens; PEM private keys; JSON Web Tokens; AWS access key ids
(``AKIA``/``ASIA``/...) and secret keys (40 base64 characters after the word "secret");
GitHub (``ghp_``, ``gho_``, ``ghu_``, ``ghs_``, ``ghr_``, ``github_pat_``), GitLab
(``glpat-``...), OpenAI-style ``sk-``, Stripe (``sk_live_``, ``rk_live_``, ``sk_test_``, ...),
SendGrid (``SG.``), DigitalOcean (``dop_v1_``...), Slack, Groq, Google, Perplexity, npm and
Telegram tokens; ``scheme://user:password@host``; ``Password=...;`` and ``Pwd=...`` in
ADO/JDBC/ODBC strings, ``password=`` URL parameters and ``mysql -p<password>``.
"""

from __future__ import annotations

import re

from memwell.retrieval.stopwords import STOPWORDS_EN
from memwell.util.lazy_import import lazy_pattern

_MIN_VISIBLE_LENGTH = 18
_KEEP_START = 6
_KEEP_END = 4
_ELLIPSIS = "…"
_PEM_PLACEHOLDER = "…redacted…"
_MAX_PASSES = 8

_WORD = "A-Za-z0-9_"
_WORD_START = rf"(?<![{_WORD}])"
_BEARER_CHARS = r"A-Za-z0-9._\-+="
_MASKED = lazy_pattern(rf"\*\*\*|.{{{_KEEP_START}}}{_ELLIPSIS}.{{{_KEEP_END}}}", re.DOTALL)


_BASE64 = "A-Za-z0-9/+="
_SECRET_NAME = r"[A-Za-z0-9_-]*(?:secret|token|password|passwd|api_?key|access_?key|private_?key)"
_PASSWORD_STATES = (
    "required incorrect wrong invalid correct expired missing empty blank set unset stored "
    "saved changed reset weak strong long short secure safe unknown hidden encrypted hashed "
    "needed optional mandatory protected shown sent case sensitive different same mine yours "
    "ours theirs good bad fine ok okay easy hard simple new old"
)
#: Words that follow "password is" in prose about a password rather than a password itself.
_PROSE_AFTER_PASSWORD = STOPWORDS_EN | frozenset(_PASSWORD_STATES.split())


def _prefixed(prefix: str, body: str, min_len: int) -> str:
    return rf"{_WORD_START}(?P<tok>{prefix}[{body}]{{{min_len},}})"


_AUTH_CHARS = _BEARER_CHARS + "/"
_URL_SAFE = r"A-Za-z0-9_\-"

#: Each kind of secret and the pattern that finds it, applied in this order. A pattern masks
#: its ``pw`` group as ``***``, its ``word`` group likewise unless it is prose, or its ``tok``
#: group keeping the ends.
SECRET_KINDS: tuple[tuple[str, str], ...] = (
    # Passwords in URLs (scheme://user:password@host) and connection strings
    # (ADO/ODBC "Password=...;", "Pwd=...", JDBC/URL "?password=...&").
    ("url password", r"[a-z][a-z0-9+.\-]*://[^\s:/@]*:(?P<pw>[^\s@/]+)@"),
    (
        "connection-string password",
        r"(?:(?<=[;?&\s\"'])|^)(?:password|pwd)\s*=\s*"
        r"(?P<pw>[^;&\s\"'](?:[^;&\r\n\"']*[^;&\s\"'])?(?=\s*;)|[^;&\s\"']+)",
    ),
    # mysql -p<password> (also mysqldump, mysqladmin...); "-p" alone prompts and is kept.
    (
        "mysql -p password",
        r"\bmysql[a-z_]*(?:[ \t]+\S+)*?[ \t]+(?-i:-p)(?P<q>[\"']?)"
        r"(?P<pw>(?<=[\"'])[^\"'\r\n]+(?=[\"'])|[^\s\"']+)(?P=q)",
    ),
    # "my password is hunter2", "the passphrase for the vault was 'x y'".
    (
        "password in prose",
        r"\b(?:password|passphrase|passcode|passwd)(?:\s+for\s+[^\s]{1,40})?\s+(?:is|was)\s*:?\s+"
        r"(?:(?P<q>[\"'`])(?P<pw>[^\"'`\r\n]{1,100})(?P=q)|(?P<word>[^\s\"'`]+))",
    ),
    # ENV-style assignments: FOO_API_KEY=value, password: "value", TOKEN='a b' (the first
    # alternative recognises a connection-string password masked above).
    (
        "key assignment",
        rf"{_WORD_START}[A-Z0-9_]*(?:KEY|TOKEN|SECRET|PASSWORD|PASSWD)(?![{_WORD}])"
        r"\s*[=:]\s*(?P<q>[\"']?)"
        r"(?P<tok>\*\*\*(?=[;&])|(?<=[\"'])[^\"'\r\n\\]+(?=[\"'])|[^\s\"'\\]+)(?P=q)",
    ),
    # JSON fields named like a secret ("apiKey", "aws_secret_access_key", "SecretAccessKey").
    ("JSON secret field", rf"\"{_SECRET_NAME}\"\s*:\s*\"(?P<tok>[^\"]+)\""),
    (
        "CLI secret flag",
        r"--(?:api[-_]?key|token|secret|password|passwd)\s+(?P<q>[\"']?)(?P<tok>[^\s\"']+)(?P=q)",
    ),
    # Authorization headers; the first alternative recognises an already masked credential.
    (
        "Authorization header",
        r"Authorization\s*[:=]\s*(?:Bearer|Basic|Token)\s+"
        rf"(?P<tok>[{_AUTH_CHARS}]{{{_KEEP_START}}}{_ELLIPSIS}[{_AUTH_CHARS}]{{{_KEEP_END}}}"
        rf"(?![{_AUTH_CHARS}])|[{_AUTH_CHARS}]+)",
    ),
    ("Bearer token", rf"{_WORD_START}Bearer\s+(?P<tok>[{_BEARER_CHARS}]{{18,}})"),
    # JSON Web Tokens: base64url JSON header ("eyJ"), payload and (possibly empty) signature.
    (
        "JWT",
        rf"{_WORD_START}(?P<tok>(?-i:eyJ)[{_URL_SAFE}]{{8,}}\.[{_URL_SAFE}]{{4,}}\.[{_URL_SAFE}]*)",
    ),
    # Well-known token prefixes.
    ("OpenAI-style sk-", _prefixed("sk-", _URL_SAFE, 8)),
    ("Stripe", _prefixed("(?:sk|rk)_(?:live|test)_", "A-Za-z0-9", 10)),
    ("GitHub", _prefixed("gh[pousr]_", "A-Za-z0-9", 20)),
    ("GitHub fine-grained", _prefixed("github_pat_", "A-Za-z0-9_", 20)),
    ("GitLab", _prefixed("gl(?:pat|dt|rt|ptt|cbt|oas|soat|ft|imt)-", _URL_SAFE, 16)),
    ("SendGrid", _prefixed(rf"SG\.[{_URL_SAFE}]{{16,}}\.", _URL_SAFE, 16)),
    ("DigitalOcean", _prefixed("do[opr]_v1_", "A-Za-z0-9", 32)),
    ("Slack", _prefixed("xox[baprs]-", r"A-Za-z0-9\-", 10)),
    ("Slack app", _prefixed("xapp-", r"A-Za-z0-9\-", 10)),
    ("Groq", _prefixed("gsk_", _URL_SAFE, 10)),
    ("Google", _prefixed("AIza", _URL_SAFE, 20)),
    ("Perplexity", _prefixed("pplx-", _URL_SAFE, 10)),
    ("npm", _prefixed("npm_", "A-Za-z0-9", 10)),
    ("Telegram bot", _prefixed("[0-9]{6,}:", _URL_SAFE, 20)),
    # AWS access key ids (upper case only) and 40-character secrets after the word "secret"
    # (an AWS secret access key, in an assignment or in prose).
    (
        "AWS access key id",
        r"(?<![A-Za-z0-9])(?P<tok>(?-i:(?:AKIA|ASIA|AGPA|AIDA|AROA|AIPA|ANPA|ANVA|A3T[A-Z0-9])"
        r"[A-Z0-9]{16}))(?![A-Za-z0-9])",
    ),
    (
        "40-character secret",
        rf"(?<![A-Za-z])secret[^\n]{{0,32}}?(?<![{_BASE64}])(?P<tok>[{_BASE64}]{{40}})"
        rf"(?![{_BASE64}])",
    ),
)

_PATTERNS = tuple(lazy_pattern(pattern, re.IGNORECASE) for _, pattern in SECRET_KINDS)

_PEM_BEGIN = lazy_pattern(r"-----BEGIN [A-Z ]*PRIVATE KEY-----", re.IGNORECASE)
_PEM_END = lazy_pattern(r"-----END [A-Z ]*PRIVATE KEY-----", re.IGNORECASE)


def _mask(token: str) -> str:
    if _MASKED.fullmatch(token):
        return token
    if len(token) < _MIN_VISIBLE_LENGTH:
        return "***"
    return f"{token[:_KEEP_START]}{_ELLIPSIS}{token[-_KEEP_END:]}"


def _masked_group(match: re.Match[str]) -> tuple[str, str] | None:
    """(group name, replacement) of the part of ``match`` to hide, or ``None`` to keep it."""
    groups = match.groupdict()
    if groups.get("pw") is not None:
        return "pw", "***"
    word = groups.get("word")
    if word is not None:
        bare = word.rstrip(".,;:!?)")
        if not bare or bare.lower() in _PROSE_AFTER_PASSWORD or bare == "***":
            return None
        return "word", "***" + word[len(bare) :]
    return "tok", _mask(match.group("tok"))


def _mask_match(match: re.Match[str]) -> str:
    whole, offset = match.group(0), match.start()
    masked = _masked_group(match)
    if masked is None:
        return whole
    name, replacement = masked
    start, end = match.start(name) - offset, match.end(name) - offset
    return f"{whole[:start]}{replacement}{whole[end:]}"


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
