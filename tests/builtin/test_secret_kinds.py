"""Every kind of secret issue 38.6 found leaking is masked in every channel.

Hypothesis strategies generate fake values of each kind in its real format (never real
credentials) inside the text that carries them; each kind is checked on :func:`redact`, a
memory write (text, heading and ``--file`` name), a session save and the sessions source.
"""

from __future__ import annotations

import base64
import json
import re
import string
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from memwell.agent.session_capture import save_session
from memwell.contract.config import MemwellSettings
from memwell.contract.errors import PathNotAllowedError
from memwell.contract.manager import MemorySearchManager
from memwell.sources.redact import SECRET_KINDS, redact
from memwell.sources.sessions import parse_session_jsonl
from memwell.writing import MemoryWriter

ALNUM = string.ascii_letters + string.digits
URL_SAFE = ALNUM + "-_"
BASE64 = ALNUM + "+/"

OpenFn = Callable[..., MemorySearchManager]


def chars(alphabet: str, size: int, max_size: int | None = None) -> st.SearchStrategy[str]:
    return st.text(
        alphabet=alphabet, min_size=size, max_size=size if max_size is None else max_size
    )


def b64url_json(fields: st.SearchStrategy[dict[str, str]]) -> st.SearchStrategy[str]:
    return fields.map(
        lambda d: base64.urlsafe_b64encode(json.dumps(d).encode()).decode().rstrip("=")
    )


JSON_FIELDS = st.dictionaries(chars(string.ascii_lowercase, 3), chars(ALNUM, 1, 12), min_size=1)
JWT = st.builds(
    lambda header, payload, signature: f"{header}.{payload}.{signature}",
    b64url_json(st.fixed_dictionaries({"alg": st.sampled_from(["HS256", "RS256", "none"])})),
    b64url_json(JSON_FIELDS),
    chars(URL_SAFE, 0, 86),
)
BASIC = st.builds(
    lambda user, password: base64.b64encode(f"{user}:{password}".encode()).decode(),
    chars(ALNUM, 3, 12),
    chars(ALNUM + "!$%", 6, 24),
)
MYSQL_PASSWORD = chars(ALNUM + "!$%^*_.", 4, 24)

#: kind -> (secret strategy, how prose carries it)
KINDS: dict[str, tuple[st.SearchStrategy[str], str]] = {
    "JWT": (JWT, "the session cookie was {} yesterday"),
    "GitLab": (chars(URL_SAFE, 20).map("glpat-".__add__), "push with {} to the mirror"),
    "SendGrid": (
        st.builds(lambda a, b: f"SG.{a}.{b}", chars(URL_SAFE, 22), chars(URL_SAFE, 43)),
        "mail key {} is live",
    ),
    "Authorization header": (BASIC, "curl -H 'Authorization: Basic {}' https://api.internal"),
    "mysql -p password": (MYSQL_PASSWORD, "run mysql -h db.internal -u root -p{} app"),
    "DigitalOcean": (
        chars("0123456789abcdef", 64).map("dop_v1_".__add__),
        "doctl auth init -t {}",
    ),
    "40-character secret": (chars(BASE64, 40), "the secret access key for prod is {} (rotate)"),
}

CARRIED = st.sampled_from(sorted(KINDS)).flatmap(
    lambda kind: KINDS[kind][0].map(lambda secret: (kind, secret, KINDS[kind][1].format(secret)))
)


def leaks(secret: str, text: str, before: str = "") -> list[str]:
    """The secret, or any 10+ character run of it, found in ``text`` (more often than in
    ``before``, the text there was before the write)."""
    runs = re.findall(r"[A-Za-z0-9+/=]{10,}", secret)
    return [part for part in [secret, *runs] if text.count(part) > before.count(part)]


def test_every_kind_is_in_the_table() -> None:
    named = {name for name, _ in SECRET_KINDS}
    assert set(KINDS) <= named


@settings(max_examples=400, deadline=None)
@given(CARRIED)
def test_generated_secrets_of_each_kind_are_masked(carried: tuple[str, str, str]) -> None:
    kind, secret, text = carried
    redacted = redact(text)
    assert not leaks(secret, redacted, text.replace(secret, "")), (kind, redacted)
    assert redact(redacted) == redacted


@pytest.mark.parametrize(
    "text",
    [
        "mysql -h db -u root -p app",  # -p alone: mysql prompts for the password
        "mysql -P3306 -h db app",  # -P is the port
        "the secret of a good review is reading the diff twice, every time",
        "a JWT has three parts: eyJ header, payload and signature",
        "use SG. as the prefix",
    ],
)
def test_lookalikes_are_kept(text: str) -> None:
    assert redact(text) == text


@pytest.fixture
def writer(open_ws: OpenFn, workspace: Path) -> MemoryWriter:
    return MemoryWriter(open_ws(workspace, provider="none"), workspace, MemwellSettings())


def all_text(workspace: Path) -> str:
    return "\n".join(
        path.relative_to(workspace).as_posix() + "\n" + path.read_text()
        for path in sorted(workspace.rglob("*.md"))
    )


SETTINGS = settings(
    max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)


@SETTINGS
@given(CARRIED)
def test_a_write_masks_each_kind_in_text_and_heading(
    writer: MemoryWriter, workspace: Path, carried: tuple[str, str, str]
) -> None:
    kind, secret, text = carried
    before = all_text(workspace)
    daily = writer.append(text)
    section = writer.append("see above", heading=text)
    assert daily.redacted and section.redacted
    assert not leaks(secret, all_text(workspace), before), kind


@SETTINGS
@given(CARRIED)
def test_a_file_name_holding_a_secret_is_refused_without_echoing_it(
    writer: MemoryWriter, workspace: Path, carried: tuple[str, str, str]
) -> None:
    kind, secret, text = carried
    before = all_text(workspace)
    with pytest.raises(PathNotAllowedError, match="looks like a secret") as refused:
        writer.append("a note", file=text)
    assert not leaks(secret, str(refused.value), text.replace(secret, "")), kind
    assert all_text(workspace) == before


@SETTINGS
@given(CARRIED)
def test_session_save_and_sessions_source_mask_each_kind(
    writer: MemoryWriter, workspace: Path, carried: tuple[str, str, str]
) -> None:
    kind, secret, text = carried
    messages = [{"role": "user", "content": text}, {"role": "assistant", "content": "noted"}]
    before = all_text(workspace)
    saved = save_session(writer, messages, session_key="test")
    assert saved.redacted
    assert not leaks(secret, all_text(workspace), before), kind
    jsonl = "\n".join(
        json.dumps({"type": "message", "message": {"role": m["role"], "content": m["content"]}})
        for m in messages
    )
    indexed = parse_session_jsonl(jsonl).content
    assert not leaks(secret, indexed, text.replace(secret, "")), kind
