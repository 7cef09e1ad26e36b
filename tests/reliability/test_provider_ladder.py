"""The provider ladder's last rung (issue 38 item 9): with an explicit provider and a fallback
that both fail, search runs by keyword only and says so, instead of refusing.

Both ways a provider fails are covered: while embedding (a server that answers 503), and at
creation (a missing API key). The CLI and the agent tool are driven as a user drives them.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from types import SimpleNamespace

import pytest
from memwell.agent.tools import execute_tool
from memwell.cli.main import main as cli_main
from memwell.contract.descriptors import EmbeddingProviderSpec, ProviderContext
from memwell.contract.embeddings import EmbeddingProvider
from memwell.contract.errors import ProviderError, ProviderUnavailableError
from memwell.contract.hookspecs import hookimpl
from memwell.providers import fallback_record as provider_fallback
from memwell.providers import runtime as embedding_runtime
from memwell.providers.fallback_record import FALLBACK_FILE
from memwell.registry.plugins import PluginRegistry, set_registry
from memwell.runtime.factory import close_all
from memwell.testing import HashEmbeddingProvider
from reliability_helpers import (
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


def down(texts: Sequence[str]) -> None:
    raise ProviderError("503 Service Unavailable", provider="flaky", retryable=False)


def failing_pair() -> tuple[HashEmbeddingProvider, HashEmbeddingProvider, PluginRegistry]:
    """A primary and a fallback whose every embedding call fails."""
    primary, backup = HashEmbeddingProvider(), HashEmbeddingProvider(model="backup-32", dims=32)
    primary.fail = backup.fail = down
    registry = make_registry(
        (provider_plugin(primary, "flaky", "remote"), "flaky"),
        (provider_plugin(backup, "backup"), "backup"),
    )
    return primary, backup, registry


def keyless(provider_id: str) -> SimpleNamespace:
    """A provider plugin that cannot start (as a remote one without its API key)."""

    def create(ctx: ProviderContext) -> EmbeddingProvider:
        raise ProviderUnavailableError(f"{provider_id.upper()}_API_KEY is not set")

    spec = EmbeddingProviderSpec(
        id=provider_id, create=create, default_model="m", transport="remote"
    )

    @hookimpl
    def memwell_embedding_providers() -> list[EmbeddingProviderSpec]:
        return [spec]

    return SimpleNamespace(memwell_embedding_providers=memwell_embedding_providers)


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    write_files(tmp_path / "ws", FILES)
    (tmp_path / "ws" / "memwell.toml").write_text(
        'provider = "flaky"\nfallback = "backup"\n[sync]\nwatch = false\n', encoding="utf-8"
    )
    return tmp_path / "ws"


@pytest.fixture
def use_registry() -> Iterator[Callable[[PluginRegistry], None]]:
    yield set_registry
    close_all()
    set_registry(None)


def cli_search(workspace: Path, capsys: pytest.CaptureFixture[str], *args: str) -> tuple[str, str]:
    cli_main(["-w", str(workspace), "search", *args])
    captured = capsys.readouterr()
    return captured.out, captured.err


def assert_keyword_only_payload(payload: dict[str, object], *failed: str) -> None:
    assert payload["mode"] == "fts-only" and payload["degraded"] is True
    assert payload["provider"] == "none"
    reason = str(payload["degraded_reason"])
    assert "keyword only" in reason and all(name in reason for name in failed), reason
    fallback = payload["provider_fallback"]
    assert isinstance(fallback, dict) and fallback["from"] == "flaky" and fallback["to"] == "none"


def test_cli_search_falls_to_keywords_when_both_providers_fail_to_embed(
    workspace: Path,
    capsys: pytest.CaptureFixture[str],
    use_registry: Callable[[PluginRegistry], None],
) -> None:
    *_, registry = failing_pair()
    use_registry(registry)
    out, err = cli_search(workspace, capsys, "meadow")
    assert "memory/notes.md" in out
    assert "note: fts-only mode:" in err and "keyword only" in err, err
    out, _ = cli_search(workspace, capsys, "meadow", "--json")
    payload = json.loads(out)
    assert payload["results"][0]["path"] == "memory/notes.md"
    assert_keyword_only_payload(payload, "backup")
    cli_main(["-w", str(workspace), "status", "--json"])
    status = json.loads(capsys.readouterr().out)
    assert status["search_mode"] == "fts-only" and status["provider_fallback"]["to"] == "none"


def test_cli_search_falls_to_keywords_when_neither_provider_starts(
    workspace: Path,
    capsys: pytest.CaptureFixture[str],
    use_registry: Callable[[PluginRegistry], None],
) -> None:
    use_registry(make_registry((keyless("flaky"), "flaky"), (keyless("backup"), "backup")))
    out, err = cli_search(workspace, capsys, "meadow", "--json")
    payload = json.loads(out)
    assert payload["results"][0]["path"] == "memory/notes.md"
    assert_keyword_only_payload(payload, "FLAKY_API_KEY", "BACKUP_API_KEY")
    assert "note: fts-only mode:" in err and "BACKUP_API_KEY" in err
    assert "install memwell-local" not in err, "the note says why; no misleading advice"
    assert not (workspace / ".memwell" / FALLBACK_FILE).exists()
    close_all()  # the next process, after the key was set: the provider starts and serves
    use_registry(make_registry((provider_plugin(HashEmbeddingProvider(), "flaky"), "flaky")))
    payload = json.loads(cli_search(workspace, capsys, "meadow", "--json")[0])
    assert payload["provider"] == "flaky" and payload["mode"] == "hybrid"
    assert payload["degraded"] is False


def test_the_agent_tool_answers_by_keyword_with_the_reason_and_sees_new_notes(
    workspace: Path,
) -> None:
    primary, backup, registry = failing_pair()
    primary.fail = backup.fail = None
    manager = build_manager(
        workspace,
        make_settings(provider="flaky", fallback="backup"),
        registry,
        retry=no_sleep_retry(),
    )
    try:
        manager.sync()  # an index with the primary's vectors
        assert execute_tool("memory_search", {"query": "meadow"}, manager)["mode"] == "hybrid"
        primary.fail = backup.fail = down
        write_files(workspace, {"memory/sky.md": "# Sky\n\nThe quasar survey starts in May.\n"})
        manager.sync()  # the primary fails, then the fallback: keyword-only, not an error
        assert manager.status().last_sync_error is None
        payload = execute_tool("memory_search", {"query": "quasar survey"}, manager)
        assert "disabled" not in payload
        assert payload["results"] and payload["results"][0]["path"] == "memory/sky.md"
        assert_keyword_only_payload(payload, "backup", "503")
        backup.fail = None  # the fallback is back: nothing changes until the retry time
        assert execute_tool("memory_search", {"query": "meadow"}, manager)["mode"] == "fts-only"
    finally:
        manager.close()


def test_the_last_rung_is_kept_with_the_index_until_the_retry_time(
    workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    primary, backup, registry = failing_pair()
    settings = make_settings(provider="flaky", fallback="backup")
    first = build_manager(workspace, settings, registry, retry=no_sleep_retry())
    try:
        first.sync()
        assert first.status().provider == "none"
    finally:
        first.close()
    record = json.loads((workspace / ".memwell" / FALLBACK_FILE).read_text(encoding="utf-8"))
    assert "fallback backup failed" in record["keyword_only"]
    calls = (primary.calls, backup.calls)
    second = build_manager(workspace, settings, registry, retry=no_sleep_retry())
    try:  # a new process: keyword-only at once, neither provider tried again
        second.sync()
        payload = execute_tool("memory_search", {"query": "meadow"}, second)
        assert_keyword_only_payload(payload, "kept with the index")
        assert (primary.calls, backup.calls) == calls
    finally:
        second.close()
    primary.fail = None  # the primary works again; after the retry time it is used
    later = time.time() + 3600 * 24
    monkeypatch.setattr(provider_fallback.time, "time", lambda: later)
    monkeypatch.setattr(embedding_runtime.time, "time", lambda: later)
    third = build_manager(workspace, settings, registry, retry=no_sleep_retry())
    try:
        third.sync()
        payload = execute_tool("memory_search", {"query": "meadow"}, third)
        assert payload["provider"] == "flaky" and payload["mode"] == "hybrid"
        assert payload["degraded"] is False
    finally:
        third.close()
    assert not (workspace / ".memwell" / FALLBACK_FILE).exists()


def test_an_explicit_provider_without_fallback_still_fails_closed(
    workspace: Path,
    capsys: pytest.CaptureFixture[str],
    use_registry: Callable[[PluginRegistry], None],
) -> None:
    (workspace / "memwell.toml").write_text(
        'provider = "flaky"\n[sync]\nwatch = false\n', encoding="utf-8"
    )
    use_registry(make_registry((keyless("flaky"), "flaky")))
    with pytest.raises(SystemExit) as info:
        cli_main(["-w", str(workspace), "search", "meadow"])
    assert info.value.code != 0
    assert "FLAKY_API_KEY" in capsys.readouterr().err
