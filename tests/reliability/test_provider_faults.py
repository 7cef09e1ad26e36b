"""Provider faults and plugin faults.

429/5xx/timeouts injected at a fixed seeded rate during a large index: indexing completes and
equals a fault-free index. Persistent failure falls back as configured and status says so. An
exception raised inside any plugin never takes the host down, and the error names the plugin.
"""

from __future__ import annotations

import logging
import random
import shutil
from collections.abc import Iterator, Sequence
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import click
import pytest
from memwell.agent.lifecycle import after_turn, before_answer
from memwell.agent.tools import execute_tool, plugin_tools, tool_definitions
from memwell.cli.main import main as cli_main
from memwell.contract.descriptors import EmbeddingProviderSpec, SearchBackend
from memwell.contract.errors import ProviderError
from memwell.contract.hookspecs import hookimpl
from memwell.registry.plugins import set_registry
from memwell.runtime.factory import close_all, open_memory
from memwell.testing import HashEmbeddingProvider
from reliability_helpers import (
    COUNTS,
    build_manager,
    make_corpus,
    make_registry,
    make_settings,
    no_sleep_retry,
    provider_plugin,
    snapshot_workspace,
    write_files,
)

SEED = 9001
FILES = 400


class HttpError(Exception):
    """Looks like an SDK's HTTP error: a ``status_code`` attribute."""

    def __init__(self, status_code: int) -> None:
        super().__init__(f"HTTP {status_code}")
        self.status_code = status_code


FAULTS = (
    lambda: ProviderError(
        "429 Too Many Requests", provider="flaky", retryable=True, status_code=429
    ),
    lambda: ProviderError(
        "503 Service Unavailable", provider="flaky", retryable=True, status_code=503
    ),
    lambda: TimeoutError("request timed out"),
    lambda: ConnectionResetError("connection reset by upstream"),
    lambda: HttpError(500),
)


class Faults:
    """Fail a seeded ``rate`` of calls with a retryable fault, never three calls in a row (so
    the default three retries always get through)."""

    def __init__(self, seed: int, rate: float) -> None:
        self.rng = random.Random(seed)
        self.rate = rate
        self.calls = 0
        self.injected = 0
        self.streak = 0

    def __call__(self, texts: Sequence[str]) -> None:
        self.calls += 1
        if self.streak < 2 and self.rng.random() < self.rate:
            self.streak += 1
            self.injected += 1
            raise self.rng.choice(FAULTS)()
        self.streak = 0


def flaky_registry(provider: HashEmbeddingProvider, *extra: tuple[object, str]) -> Any:
    return make_registry((provider_plugin(provider, "flaky", "remote"), "flaky"), *extra)


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    write_files(tmp_path / "ws", make_corpus(FILES, 1, SEED))
    return tmp_path / "ws"


def test_transient_faults_during_a_large_index(tmp_path: Path, workspace: Path) -> None:
    settings = make_settings(provider="flaky")
    reference_ws = tmp_path / "reference"
    shutil.copytree(workspace, reference_ws)
    clean = build_manager(reference_ws, settings, flaky_registry(HashEmbeddingProvider()))
    clean.sync()
    clean.close()

    provider = HashEmbeddingProvider()
    faults = Faults(SEED, rate=0.3)
    provider.fail = faults
    sleeps: list[float] = []
    manager = build_manager(
        workspace, settings, flaky_registry(provider), retry=no_sleep_retry(sleeps)
    )
    try:
        manager.sync()
        status = manager.status()
        assert status.last_sync_error is None
        assert status.provider == "flaky" and status.provider_fallback is None
        assert status.integrity_ok and status.chunks > FILES
        hits = manager.search("meadow", min_score=0.0)  # query embeddings retry too
        assert hits
    finally:
        manager.close()
    assert faults.injected >= 15, "the large index should have met many faults"
    assert len(sleeps) == faults.injected
    assert set(sleeps) <= {0.55, 1.1, 2.2}  # 500 ms doubling with the (fixed) jitter
    assert snapshot_workspace(workspace) == snapshot_workspace(reference_ws)
    COUNTS["faults injected"] += faults.injected


class Always:
    """Fail every call with ``exc``; ``count`` says how many faults were raised."""

    def __init__(self, exc: Exception) -> None:
        self.exc = exc
        self.count = 0

    def __call__(self, texts: Sequence[str]) -> None:
        self.count += 1
        COUNTS["faults injected"] += 1
        raise self.exc


def always(exc: Exception) -> Always:
    return Always(exc)


def test_persistent_failure_falls_back_to_the_configured_provider(workspace: Path) -> None:
    primary = HashEmbeddingProvider()
    primary.fail = always(ProviderError("503 Service Unavailable", retryable=True))
    backup = HashEmbeddingProvider(model="backup-32", dims=32)
    registry = flaky_registry(primary, (provider_plugin(backup, "backup"), "backup"))
    sleeps: list[float] = []
    settings = make_settings(provider="flaky", fallback="backup")
    manager = build_manager(workspace, settings, registry, retry=no_sleep_retry(sleeps))
    try:
        manager.sync()
        status = manager.status()
        assert status.provider == "backup" and status.model == "backup-32"
        assert status.provider_fallback is not None
        assert status.provider_fallback.from_ == "flaky"
        assert status.provider_fallback.to == "backup"
        assert "503" in status.provider_fallback.reason
        assert status.integrity_ok and status.vector is not None and status.vector.dims == 32
        assert manager.search("meadow", min_score=0.0)
        payload = execute_tool("memory_search", {"query": "meadow"}, manager)
        assert payload["results"] and payload["provider"] == "backup"
    finally:
        manager.close()
    assert sleeps == [0.55, 1.1, 2.2]  # three retries, then the fallback


def test_persistent_failure_without_fallback_keeps_serving_and_says_why(
    workspace: Path, caplog: pytest.LogCaptureFixture
) -> None:
    provider = HashEmbeddingProvider()
    registry = flaky_registry(provider)
    manager = build_manager(
        workspace, make_settings(provider="flaky"), registry, retry=no_sleep_retry()
    )
    try:
        manager.sync()
        provider.fail = always(  # worded like memwell.providers.remote.status_error
            ProviderError(
                "flaky embeddings request failed (HTTP 500): Internal Server Error",
                provider="flaky",
                retryable=True,
                status_code=500,
            )
        )
        write_files(workspace, {"memory/new.md": "# New\n\nquasar notes\n"})
        with pytest.raises(ProviderError, match="flaky"):
            manager.sync()
        status = manager.status()
        assert status.last_sync_error is not None and "500" in status.last_sync_error
        hits = manager.search("meadow", min_score=0.0)  # the old index still answers
        assert hits
        assert manager.status().last_sync_error is not None
        payload = execute_tool("memory_search", {"query": "meadow"}, manager)
        assert payload["results"] and "disabled" not in payload
    finally:
        manager.close()


# -- plugin faults ---------------------------------------------------------------------------


class Broken:
    """A plugin whose every hook raises."""

    @hookimpl
    def memwell_search_backends(self) -> Any:
        raise RuntimeError("boom in memwell_search_backends")

    @hookimpl
    def memwell_embedding_providers(self) -> Any:
        raise RuntimeError("boom in memwell_embedding_providers")

    @hookimpl
    def memwell_before_answer(self, manager: Any, prompt: str) -> Any:
        raise RuntimeError("boom in memwell_before_answer")

    @hookimpl
    def memwell_after_turn(self, manager: Any, messages: Any) -> Any:
        raise RuntimeError("boom in memwell_after_turn")

    @hookimpl
    def memwell_agent_tools(self, manager: Any) -> Any:
        raise RuntimeError("boom in memwell_agent_tools")

    @hookimpl
    def memwell_cli_commands(self, cli: Any) -> Any:
        raise RuntimeError("boom in memwell_cli_commands")


class Recall:
    """A well-behaved plugin next to the broken one."""

    @hookimpl
    def memwell_before_answer(self, manager: Any, prompt: str) -> str:
        return "recalled"


def crash(ctx: Any) -> Any:
    raise RuntimeError("boom in create")


def spec_plugin(**hooks: Any) -> SimpleNamespace:
    made = {}
    for name, items in hooks.items():

        def hook(items: list[Any] = items) -> list[Any]:
            return items

        made[name] = hookimpl(hook)
    return SimpleNamespace(**made)


@pytest.fixture
def closing() -> Iterator[None]:
    yield
    close_all()


def warned_about(caplog: pytest.LogCaptureFixture, plugin: str) -> bool:
    return any(plugin in r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING)


def test_plugin_hook_exceptions_never_take_the_host_down(
    workspace: Path,
    caplog: pytest.LogCaptureFixture,
    capsys: pytest.CaptureFixture[str],
    closing: None,
) -> None:
    caplog.set_level(logging.WARNING)
    registry = make_registry((Broken(), "broken-plugin"), (Recall(), "recall-plugin"))
    assert "builtin" in registry.backends and "hash" in registry.providers
    info = registry.infos["broken-plugin"]
    assert info.status == "error" and info.error is not None and "memwell_" in info.error
    manager = open_memory(workspace, settings=make_settings(), registry=registry)
    assert manager.search("meadow", min_score=0.0)
    checks = 1
    caplog.clear()
    assert before_answer(manager, "meadow", registry=registry) == "recalled"
    assert warned_about(caplog, "broken-plugin")
    caplog.clear()
    after_turn(manager, [{"role": "user", "content": "hi"}], registry=registry)
    assert warned_about(caplog, "broken-plugin")
    caplog.clear()
    assert plugin_tools(manager, registry) == []
    assert [d["function"]["name"] for d in tool_definitions(manager, registry)] == [
        "memory_search",
        "memory_get",
    ]
    assert warned_about(caplog, "broken-plugin")
    payload = execute_tool("nope", {}, manager, registry=registry)
    assert "error" in payload
    checks += 4
    caplog.clear()
    set_registry(registry)  # the CLI lists plugins from the process-wide registry
    try:
        cli_main(["plugins", "--json"])
    finally:
        set_registry(None)
    assert "broken-plugin" in capsys.readouterr().out
    # Plugin commands load lazily (on a name the CLI does not know), through this call:
    registry.call_each("memwell_cli_commands", cli=click.Group())
    assert warned_about(caplog, "broken-plugin")
    COUNTS["plugin faults isolated"] += checks + 1


def test_provider_plugin_that_crashes_is_named_and_skipped(
    workspace: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING)
    buggy = spec_plugin(
        memwell_embedding_providers=[
            EmbeddingProviderSpec(
                id="buggy", create=crash, default_model="m", transport="local", auto_priority=1
            )
        ]
    )
    registry = make_registry((buggy, "buggy-plugin"))
    # auto: the crashing provider is skipped (named), keyword-only search still works
    auto = build_manager(workspace, make_settings(provider="auto", index_dir=".a"), registry)
    auto.sync()
    status = auto.status()
    assert status.search_mode == "fts-only"
    assert status.provider_unavailable_reason and "buggy" in status.provider_unavailable_reason
    assert auto.search("meadow", min_score=0.0)
    auto.close()
    # explicit with a fallback: the fallback serves, and status names the failed provider
    chosen = build_manager(
        workspace, make_settings(provider="buggy", fallback="hash", index_dir=".b"), registry
    )
    chosen.sync()
    fallback = chosen.status().provider_fallback
    assert fallback is not None and fallback.from_ == "buggy" and "boom" in fallback.reason
    chosen.close()
    # explicit without a fallback: a clear error that names the provider
    alone = build_manager(workspace, make_settings(provider="buggy", index_dir=".c"), registry)
    with pytest.raises(ProviderError, match="'buggy' failed to start: RuntimeError: boom"):
        alone.sync()
    payload = execute_tool("memory_search", {"query": "meadow"}, alone)
    assert payload.get("disabled") and "buggy" in payload["error"]
    alone.close()
    COUNTS["plugin faults isolated"] += 3


def test_provider_that_raises_while_embedding_is_named(workspace: Path) -> None:
    provider = HashEmbeddingProvider()
    provider.fail = always(KeyError("unexpected field"))
    manager = build_manager(workspace, make_settings(provider="flaky"), flaky_registry(provider))
    try:
        with pytest.raises(ProviderError, match="'flaky'"):
            manager.sync()
        status = manager.status()
        assert status.last_sync_error is not None and "flaky" in status.last_sync_error
    finally:
        manager.close()
    COUNTS["plugin faults isolated"] += 1


class BrokenManager:
    """A backend manager whose every call raises."""

    closed = False

    def __getattr__(self, name: str) -> Any:
        def fail(*args: Any, **kwargs: Any) -> Any:
            if name == "close":
                return None
            raise RuntimeError(f"boom in backend {name}")

        return fail


def test_backend_plugin_failures_fall_back_to_builtin(workspace: Path, closing: None) -> None:
    def broken_manager(ctx: Any) -> Any:
        return BrokenManager()

    plugin = spec_plugin(
        memwell_search_backends=[
            SearchBackend(name="crashy", create=crash),
            SearchBackend(name="flaky-backend", create=broken_manager),
        ]
    )
    registry = make_registry((plugin, "backend-plugin"))
    for name, reason in (("crashy", "boom in create"), ("flaky-backend", "boom in backend")):
        manager = open_memory(workspace, settings=make_settings(backend=name), registry=registry)
        assert manager.search("meadow", min_score=0.0)
        status = manager.status()
        assert status.backend == "builtin"
        assert status.fallback is not None and status.fallback.from_ == name
        assert reason in status.fallback.reason
        manager.close()
        COUNTS["plugin faults isolated"] += 1


def test_provider_whose_create_raises_never_quarantines_or_falls_back(
    workspace: Path, closing: None
) -> None:
    """Issue 15 item 4: a provider whose ``create`` raises is a provider failure. The healthy
    index it meets is kept as it is (no ``*.corrupt-*``), and a non-builtin backend that
    sees the failure does not switch to the builtin one (which would fail the same way)."""
    from memwell_sqlite.layout import IndexDir
    from memwell_sqlite.plugin import _create as builtin_create

    buggy = spec_plugin(
        memwell_embedding_providers=[
            EmbeddingProviderSpec(id="buggy", create=crash, default_model="m", transport="local")
        ],
        memwell_search_backends=[SearchBackend(name="sqlite-alias", create=builtin_create)],
    )
    registry = make_registry((buggy, "buggy-plugin"))
    healthy = build_manager(workspace, make_settings(), registry)
    healthy.sync()
    healthy.close()
    index = IndexDir(workspace / ".memwell")
    published = index.current()
    assert published is not None
    before = snapshot_workspace(workspace)

    manager = build_manager(workspace, make_settings(provider="buggy"), registry)
    with pytest.raises(ProviderError, match="'buggy' failed to start"):
        manager.sync()
    with pytest.raises(ProviderError, match="'buggy'"):
        manager.search("meadow", min_score=0.0)
    assert manager.status().custom["recovered"] == []
    manager.close()
    assert index.current() == published and snapshot_workspace(workspace) == before
    assert not list(index.root.glob("*.corrupt-*")), "a healthy index was quarantined"

    wrapped = open_memory(
        workspace,
        settings=make_settings(backend="sqlite-alias", provider="buggy"),
        registry=registry,
    )
    with pytest.raises(ProviderError, match="'buggy'"):
        wrapped.sync()
    status = wrapped.status()
    assert status.fallback is None, "a provider failure made the backend fall back"
    assert index.current() == published and not list(index.root.glob("*.corrupt-*"))
    COUNTS["plugin faults isolated"] += 2
