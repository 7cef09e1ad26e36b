"""Secrets in session transcripts are redacted before they reach the index, a provider or a log.

A transcript carries API keys and tokens in every format the redactor knows. After indexing
(with a primary provider that fails and echoes its input in the error, as some SDKs do, so the
fallback provider takes over and a warning is logged) no secret may appear in any file of the
index directory, in any text a provider received, in any log record, in status or in what the
tools return.
"""

from __future__ import annotations

import json
import logging
import random
import re
import string
from collections.abc import Sequence
from pathlib import Path

import pytest
from memwell.agent.tools import execute_tool
from memwell.contract.errors import ProviderError
from memwell.testing import HashEmbeddingProvider
from memwell_sqlite.driver import connect
from memwell_sqlite.layout import IndexDir
from reliability_helpers import (
    COUNTS,
    build_manager,
    index_root,
    make_registry,
    make_settings,
    no_sleep_retry,
    provider_plugin,
    write_files,
)


def token(
    rng: random.Random, length: int, alphabet: str = string.ascii_letters + string.digits
) -> str:
    return "".join(rng.choice(alphabet) for _ in range(length))


def make_secrets(rng: random.Random) -> dict[str, str]:
    """Secret value -> the text that carries it."""
    values = {
        "openai": "sk-proj-" + token(rng, 40),
        "github": "ghp_" + token(rng, 36),
        "bearer": token(rng, 40),
        "json": token(rng, 32),
        "cli": token(rng, 30),
        "env": token(rng, 28),
        "slack": "xoxb-" + token(rng, 24),
        "google": "AIza" + token(rng, 35),
        "telegram": "123456789:" + token(rng, 35),
        "pem": token(rng, 64),
        "aws_id": "AKIA" + token(rng, 16, string.ascii_uppercase + string.digits),
        "aws_secret": token(rng, 40, string.ascii_letters + string.digits + "/+"),
        "github_oauth": "gho_" + token(rng, 36),
        "github_server": "ghs_" + token(rng, 36),
        "stripe": "sk_live_" + token(rng, 24),
        "stripe_restricted": "rk_live_" + token(rng, 24),
        "url_password": token(rng, 16),
        "ado_password": token(rng, 14),
        "phrase_password": token(rng, 13),
        "jwt": "eyJhbGciOiJIUzI1NiJ9." + "eyJ" + token(rng, 40) + "." + token(rng, 43),
        "gitlab": "glpat-" + token(rng, 20),
        "sendgrid": "SG." + token(rng, 22) + "." + token(rng, 43),
        "basic": token(rng, 32) + "==",
        "mysql": token(rng, 14),
        "digitalocean": "dop_v1_" + token(rng, 64, "0123456789abcdef"),
        "prose_secret": token(rng, 40, string.ascii_letters + string.digits + "/+"),
    }
    carriers = {
        "openai": f"my key is {values['openai']} keep it safe",
        "github": f"push with {values['github']} please",
        "bearer": f"curl -H 'Authorization: Bearer {values['bearer']}' https://api",
        "json": f'config {{"apiKey": "{values["json"]}"}} loaded',
        "cli": f"run tool --api-key {values['cli']} now",
        "env": f"export OPENAI_API_KEY={values['env']}",
        "slack": f"slack bot {values['slack']} joined",
        "google": f"maps key {values['google']} rotated",
        "telegram": f"bot token {values['telegram']} for alerts",
        "pem": "-----BEGIN RSA PRIVATE KEY-----\n"
        + values["pem"]
        + "\n-----END RSA PRIVATE KEY-----",
        "aws_id": f"deploy with access key {values['aws_id']} today",
        "aws_secret": f"the aws secret access key is {values['aws_secret']} (rotate it)",
        "github_oauth": f"oauth token {values['github_oauth']} from the app",
        "github_server": f"actions used {values['github_server']} in CI",
        "stripe": f"billing uses {values['stripe']} in production",
        "stripe_restricted": f"reporting key {values['stripe_restricted']} is read-only",
        "url_password": f"db at postgres://app:{values['url_password']}@db.internal:5432/app",
        "ado_password": f"Server=db;Database=app;User Id=sa;Password={values['ado_password']};",
        "phrase_password": f"my password is {values['phrase_password']} for the vault",
        "jwt": f"the cookie was {values['jwt']} yesterday",
        "gitlab": f"mirror token {values['gitlab']} expires soon",
        "sendgrid": f"mail key {values['sendgrid']} is live",
        "basic": f"curl -H 'Authorization: Basic {values['basic']}' https://api",
        "mysql": f"mysql -h db -u root -p{values['mysql']} app",
        "digitalocean": f"doctl auth init -t {values['digitalocean']}",
        "prose_secret": f"the secret access key for prod is {values['prose_secret']} ok",
    }
    return {values[k]: carriers[k] for k in values}


def transcript(carriers: Sequence[str]) -> str:
    lines = []
    for number, text in enumerate(carriers):
        role = "user" if number % 2 == 0 else "assistant"
        content: object = text if number % 3 else [{"type": "text", "text": text}]
        lines.append(
            json.dumps(
                {"type": "message", "message": {"role": role, "content": content}},
                ensure_ascii=number % 2 == 0,
            )
        )
        lines.append(
            json.dumps(
                {"type": "message", "message": {"role": "user", "content": "credentials rotated"}}
            )
        )
    return "\n".join(lines) + "\n"


def secret_fragments(secret: str) -> list[str]:
    """The secret and every alphanumeric run of 12+ characters in it (what redaction hides)."""
    return [secret, *(run for run in re.findall(r"[A-Za-z0-9]{12,}", secret))]


def test_session_secrets_reach_no_index_provider_or_log(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    rng = random.Random(31337)
    secrets = make_secrets(rng)
    workspace = tmp_path / "ws"
    write_files(workspace, {"MEMORY.md": "# Memory\n\ncredentials live in the vault\n"})
    (workspace / "sessions").mkdir()
    (workspace / "sessions" / "chat.jsonl").write_text(transcript(list(secrets.values())))

    received: list[str] = []
    primary = HashEmbeddingProvider()

    def echo_and_fail(texts: Sequence[str]) -> None:
        received.extend(texts)
        raise ProviderError(f"400 invalid input: {texts[0]!r}", provider="hash", retryable=False)

    primary.fail = echo_and_fail
    backup = HashEmbeddingProvider(model="backup-32", dims=32)
    backup.fail = received.extend
    registry = make_registry((provider_plugin(backup, "backup"), "backup"), provider=primary)
    settings = make_settings(sources=["memory", "sessions"], fallback="backup")
    caplog.set_level(logging.DEBUG)
    manager = build_manager(workspace, settings, registry, retry=no_sleep_retry())
    try:
        manager.sync()
        status = manager.status()
        assert status.provider == "backup"
        assert status.provider_fallback is not None and status.provider_fallback.to == "backup"
        assert any("using fallback" in r.getMessage() for r in caplog.records)
        hits = manager.search("credentials rotated key token", min_score=0.0, max_results=50)
        assert any(h.source == "sessions" for h in hits), "the transcript was not indexed"
        payload = execute_tool(
            "memory_search", {"query": "key token bearer", "max_results": 50}, manager
        )
        shown = json.dumps(payload) + json.dumps(status.model_dump(mode="json"))
        shown += "".join(h.snippet for h in hits)
        current = IndexDir(index_root(workspace)).current()
        assert current is not None
        conn, _ = connect(current)
        stored = "\n".join(row[0] for row in conn.execute("SELECT text FROM chunks"))
        assert "…" in stored, "nothing was masked"
    finally:
        manager.close()

    blobs = b"".join(p.read_bytes() for p in index_root(workspace).rglob("*") if p.is_file())
    logs = caplog.text + "".join(repr(r.args) for r in caplog.records)
    sent = "\n".join(received)
    assert received, "no provider received anything"
    for secret in secrets:
        for fragment in secret_fragments(secret):
            assert fragment.encode() not in blobs, f"index files hold {fragment[:8]}…"
            assert fragment not in sent, f"a provider received {fragment[:8]}…"
            assert fragment not in logs, f"a log holds {fragment[:8]}…"
            assert fragment not in shown, f"tools or status show {fragment[:8]}…"
            assert fragment not in stored
            found = conn.execute(
                "SELECT count(*) FROM chunks_fts WHERE chunks_fts MATCH ?",
                ('"' + fragment.replace('"', '""') + '"',),
            ).fetchone()[0]
            assert found == 0, f"the keyword index knows {fragment[:8]}…"
    conn.close()
    COUNTS["secrets checked"] += len(secrets)
    COUNTS["redaction families"] += len(secrets)
