"""A provider fallback kept with the index, and degraded searches said in every payload.

Issue 14 item 8: a new process used to retry a failed primary and re-embed everything twice;
a query-time embedding failure used to answer keyword-only while the payload said "hybrid".
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Sequence
from pathlib import Path

import pytest
from memwell.agent.tools import execute_tool
from memwell.cli.main import main as cli_main
from memwell.contract.errors import ProviderError
from memwell.providers.fallback_record import FALLBACK_FILE, MAX_RETRY_SECONDS, retry_delay
from memwell.registry.plugins import PluginRegistry, set_registry
from memwell.runtime.factory import close_all
from memwell.testing import HashEmbeddingProvider
from memwell_sqlite.manager import SqliteMemoryManager
from reliability_helpers import (
    COUNTS,
    build_manager,
    make_registry,
    make_settings,
    no_sleep_retry,
    provider_plugin,
    write_files,
)

FILES = {
    "MEMORY.md": "# Memory\n\nThe deploy window is Friday at noon.\n",
    "memory/notes.md": "# Notes\n\nThe meadow project ships in spring.\n",
}


class Outage:
    """Every embedding call fails with a 503 until ``down`` is cleared."""

    def __init__(self, retryable: bool = True) -> None:
        self.down = True
        self.calls = 0
        self.retryable = retryable

    def __call__(self, texts: Sequence[str]) -> None:
        if self.down:
            self.calls += 1
            raise ProviderError(
                "503 Service Unavailable", provider="flaky", retryable=self.retryable
            )


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    write_files(tmp_path / "ws", FILES)
    return tmp_path / "ws"


def _setup(
    retryable: bool = True,
) -> tuple[HashEmbeddingProvider, Outage, PluginRegistry]:
    primary = HashEmbeddingProvider()
    outage = Outage(retryable)
    primary.fail = outage
    backup = HashEmbeddingProvider(model="backup-32", dims=32)
    registry = make_registry(
        (provider_plugin(primary, "flaky", "remote"), "flaky"),
        (provider_plugin(backup, "backup"), "backup"),
    )
    return backup, outage, registry


def _open(workspace: Path, registry: PluginRegistry, **settings: object) -> SqliteMemoryManager:
    """A manager as a new process builds it: a fresh runtime, nothing in memory."""
    merged = {"provider": "flaky", "fallback": "backup", **settings}
    return build_manager(workspace, make_settings(**merged), registry, retry=no_sleep_retry())


def _record(workspace: Path) -> dict[str, object]:
    data: dict[str, object] = json.loads(
        (workspace / ".memwell" / FALLBACK_FILE).read_text(encoding="utf-8")
    )
    return data


def test_a_new_process_keeps_the_fallback_instead_of_re_embedding(workspace: Path) -> None:
    backup, outage, registry = _setup()
    first = _open(workspace, registry)
    first.sync()
    assert first.status().provider == "backup"
    first.close()
    record = _record(workspace)
    assert record["primary"] == "flaky" and record["fallback"] == "backup"
    assert record["failures"] == 1 and "503" in str(record["reason"])
    calls, embedded = outage.calls, backup.embedded

    second = _open(workspace, registry)  # the next one-shot `memwell search`
    try:
        second.sync()
        hits = second.search("meadow", min_score=0.0)
        status = second.status()
    finally:
        second.close()
    assert hits
    assert outage.calls == calls, "the failed primary was tried again by a new process"
    assert backup.embedded - embedded == 1, "only the query was embedded, nothing re-embedded"
    assert status.provider == "backup" and status.provider_fallback is not None
    assert "kept with the index" in status.provider_fallback.reason
    COUNTS["faults injected"] += outage.calls


def test_the_primary_is_probed_once_after_the_retry_interval(workspace: Path) -> None:
    backup, outage, registry = _setup()
    first = _open(workspace, registry)
    first.sync()
    first.close()
    path = workspace / ".memwell" / FALLBACK_FILE
    record = _record(workspace)
    path.write_text(json.dumps({**record, "retry_at": time.time() - 1}), encoding="utf-8")
    calls, embedded = outage.calls, backup.embedded

    still_down = _open(workspace, registry)
    try:
        still_down.sync()
        assert still_down.status().provider == "backup"
    finally:
        still_down.close()
    assert outage.calls == calls + 1, "one probe, no retries"
    assert backup.embedded == embedded, "a failed probe re-embeds nothing"
    again = _record(workspace)
    assert again["failures"] == 2
    waited = float(str(again["retry_at"])) - float(str(again["failed_at"]))
    assert waited == pytest.approx(retry_delay(2, 60 * 60)) == 2 * 60 * 60

    path.write_text(json.dumps({**again, "retry_at": time.time() - 1}), encoding="utf-8")
    outage.down = False
    healed = _open(workspace, registry)
    try:
        healed.sync()
        status = healed.status()
    finally:
        healed.close()
    assert status.provider == "flaky" and status.provider_fallback is None
    assert status.integrity_ok and status.vector is not None and status.vector.dims == 64
    assert not path.exists(), "a working primary clears the record"


def test_retry_delay_doubles_and_is_capped() -> None:
    assert [retry_delay(n, 60) for n in (1, 2, 3)] == [60, 120, 240]
    assert retry_delay(40, 3600) == MAX_RETRY_SECONDS


def test_an_unreadable_record_is_ignored(workspace: Path) -> None:
    _, outage, registry = _setup()
    (workspace / ".memwell").mkdir()
    (workspace / ".memwell" / FALLBACK_FILE).write_text("{not json", encoding="utf-8")
    manager = _open(workspace, registry)
    try:
        manager.sync()  # the primary is tried, fails, and the fallback is recorded afresh
        assert manager.status().provider == "backup"
    finally:
        manager.close()
    assert outage.calls > 0 and _record(workspace)["failures"] == 1


def test_a_query_embedding_failure_is_reported_as_keyword_only(workspace: Path) -> None:
    provider = HashEmbeddingProvider()
    registry = make_registry(provider=provider)
    manager = build_manager(workspace, make_settings(), registry, retry=no_sleep_retry())
    try:
        manager.sync()
        healthy = execute_tool("memory_search", {"query": "meadow"}, manager)
        assert healthy["mode"] == "hybrid" and healthy["degraded"] is False

        def refuse(texts: Sequence[str]) -> None:
            raise ProviderError("401 invalid api key", provider="hash")

        provider.fail = refuse
        # another query: the healthy one's vector is remembered and needs no provider call
        payload = execute_tool("memory_search", {"query": "the meadow"}, manager)
        assert payload["results"], "keyword search still answers"
        assert payload["mode"] == "fts-only" and payload["degraded"] is True
        assert "query embedding failed" in payload["degraded_reason"]
        status = manager.status()
        assert status.degraded is not None and status.degraded.mode == "fts-only"
        assert status.search_mode == "hybrid", "the index itself is still hybrid"

        provider.fail = None
        recovered = execute_tool("memory_search", {"query": "meadow"}, manager)
        assert recovered["mode"] == "hybrid" and recovered["degraded"] is False
    finally:
        manager.close()


def test_search_json_carries_the_fallback_and_mode(
    workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _, _, registry = _setup(retryable=False)  # the CLI retries for real
    (workspace / "memwell.toml").write_text(
        'provider = "flaky"\nfallback = "backup"\n[sync]\nwatch = false\n', encoding="utf-8"
    )
    set_registry(registry)
    try:
        cli_main(["-w", str(workspace), "search", "meadow", "--json"])
        first = json.loads(capsys.readouterr().out)
        close_all()
        cli_main(["-w", str(workspace), "search", "meadow", "--json"])
        second = json.loads(capsys.readouterr().out)
        cli_main(["-w", str(workspace), "status", "--json"])
        status = json.loads(capsys.readouterr().out)
    finally:
        close_all()
        set_registry(None)
    for payload in (first, second):
        assert payload["results"] and payload["mode"] == "hybrid"
        assert payload["provider"] == "backup" and payload["degraded"] is True
        assert payload["provider_fallback"]["from"] == "flaky"
        assert "embedding provider flaky -> backup" in payload["degraded_reason"]
    assert status["provider_fallback"]["to"] == "backup"
    assert status["degraded"] is None and status["search_mode"] == "hybrid"


class Hang:
    """Block every embedding call until released (a hung local model)."""

    def __init__(self) -> None:
        self.release = threading.Event()
        self.entered = 0

    def __call__(self, texts: Sequence[str]) -> None:
        self.entered += 1
        self.release.wait(30)


def test_a_hung_local_model_times_out_and_search_degrades_to_keywords(workspace: Path) -> None:
    provider = HashEmbeddingProvider()
    registry = make_registry((provider_plugin(provider, "slowlocal", "local"), "slowlocal"))
    settings = make_settings(
        provider="slowlocal",
        local={"query_timeout_seconds": 0.3, "batch_timeout_seconds": 0.3},
    )
    manager = build_manager(workspace, settings, registry, retry=no_sleep_retry())
    hang = Hang()
    try:
        manager.sync()
        provider.fail = hang
        payload = execute_tool("memory_search", {"query": "meadow"}, manager)
        assert payload["results"], "the keyword index answers while the model hangs"
        assert payload["mode"] == "fts-only" and payload["degraded"] is True
        assert "timed out after 0.3 s" in payload["degraded_reason"]
        assert hang.entered == 1, "a timed-out local call is not retried"
        status = manager.status()
        assert status.degraded is not None and "timed out" in status.degraded.reason

        write_files(workspace, {"memory/new.md": "# New\n\nquasar notes\n"})
        with pytest.raises(ProviderError, match=r"batch .*timed out"):
            manager.sync()
        assert manager.status().last_sync_error is not None
    finally:
        hang.release.set()
        manager.close()
    COUNTS["faults injected"] += hang.entered
