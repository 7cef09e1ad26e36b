"""open_memory: backend and provider through the registries, caching, builtin fallback."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import memwell_sqlite.plugin
import pytest
from memwell.contract.config import MemwellSettings
from memwell.contract.descriptors import BackendContext, SearchBackend
from memwell.contract.errors import ConfigError
from memwell.contract.hookspecs import hookimpl
from memwell.contract.manager import BaseMemoryManager
from memwell.contract.models import MemorySearchResult, MemoryStatus
from memwell.registry.plugins import PluginRegistry
from memwell.runtime import factory
from memwell.runtime.factory import open_memory, resolve_workspace
from memwell.runtime.fallback import FallbackMemoryManager
from memwell.testing import hash_provider_plugin
from memwell.testing.conformance import write_workspace


class FlakyManager(BaseMemoryManager):
    """A non-builtin backend whose search always fails."""

    def __init__(self, ctx: BackendContext) -> None:
        self.ctx = ctx
        self.closed = False
        self.close_calls = 0

    def search(
        self,
        query: str,
        *,
        max_results: int | None = None,
        min_score: float | None = None,
        session_key: str | None = None,
        sources: Sequence[str] | None = None,
    ) -> list[MemorySearchResult]:
        raise RuntimeError("flaky search engine crashed")

    def status(self) -> MemoryStatus:
        return MemoryStatus(backend="flaky", provider="none", workspace_dir=str(self.ctx.workspace))

    def sync(self, **kwargs: Any) -> None:
        return None

    def close(self) -> None:
        self.closed = True
        self.close_calls += 1


class FakeBackends:
    def __init__(self) -> None:
        self.created: list[FlakyManager] = []
        self.create_error: Exception | None = None

    def create(self, ctx: BackendContext) -> FlakyManager:
        if self.create_error is not None:
            raise self.create_error
        manager = FlakyManager(ctx)
        self.created.append(manager)
        return manager

    def plugin(self) -> SimpleNamespace:
        @hookimpl
        def memwell_search_backends() -> list[SearchBackend]:
            return [SearchBackend(name="flaky", create=self.create, description="fails")]

        return SimpleNamespace(memwell_search_backends=memwell_search_backends)


@pytest.fixture(autouse=True)
def _close_cached() -> Iterator[None]:
    yield
    factory.close_all()


@pytest.fixture
def fakes() -> FakeBackends:
    return FakeBackends()


@pytest.fixture
def registry(fakes: FakeBackends) -> PluginRegistry:
    reg = PluginRegistry(load_entry_points=False)
    reg.register(memwell_sqlite.plugin, "builtin")
    reg.register(hash_provider_plugin(), "hash")
    reg.register(fakes.plugin(), "flaky-plugin")
    return reg


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    return write_workspace(tmp_path / "ws")


def make_settings(**kw: Any) -> MemwellSettings:
    base: dict[str, Any] = {"provider": "hash", "sync": {"watch": False}}
    base.update(kw)
    return MemwellSettings.model_validate(base)


def test_builtin_with_hash_provider_searches(ws: Path, registry: PluginRegistry) -> None:
    memory = open_memory(ws, settings=make_settings(), registry=registry)
    assert not isinstance(memory.inner, FallbackMemoryManager)
    memory.sync(reason="test")
    hits = memory.search("Zanzibar codename", min_score=0.0)
    assert hits and hits[0].path == "memory/2026-01-02.md"
    status = memory.status()
    assert status.backend == "builtin"
    assert status.provider == "hash"
    assert Path(status.workspace_dir).resolve() == ws.resolve()


def test_manager_cached_per_workspace_and_settings(
    ws: Path, tmp_path: Path, registry: PluginRegistry
) -> None:
    settings = make_settings()
    first = open_memory(ws, settings=settings, registry=registry)
    assert open_memory(ws, settings=make_settings(), registry=registry) is first
    assert open_memory(str(ws) + "/", settings=settings, registry=registry) is first
    other_settings = open_memory(ws, settings=make_settings(provider="none"), registry=registry)
    assert other_settings is not first
    other_ws = write_workspace(tmp_path / "ws2")
    assert open_memory(other_ws, settings=settings, registry=registry) is not first


def test_new_manager_after_close(ws: Path, registry: PluginRegistry) -> None:
    settings = make_settings()
    first = open_memory(ws, settings=settings, registry=registry)
    first.close()
    second = open_memory(ws, settings=settings, registry=registry)
    assert second is not first
    second.sync()
    assert second.search("Zanzibar", min_score=0.0)


def test_status_purpose_is_never_cached(ws: Path, registry: PluginRegistry) -> None:
    settings = make_settings()
    a = open_memory(ws, settings=settings, registry=registry, purpose="status")
    b = open_memory(ws, settings=settings, registry=registry, purpose="status")
    try:
        assert a is not b
        assert open_memory(ws, settings=settings, registry=registry) not in (a, b)
    finally:
        a.close()
        b.close()


def test_unknown_backend_lists_installed(ws: Path, registry: PluginRegistry) -> None:
    with pytest.raises(ConfigError) as info:
        open_memory(ws, settings=make_settings(backend="nope"), registry=registry)
    message = str(info.value)
    assert "'nope'" in message and "builtin" in message and "flaky" in message
    assert info.value.key == "backend"


def test_unknown_provider_fails_on_use(ws: Path, registry: PluginRegistry) -> None:
    memory = open_memory(ws, settings=make_settings(provider="nosuch"), registry=registry)
    with pytest.raises(ConfigError, match="nosuch"):
        memory.sync()


def test_settings_loaded_from_workspace_toml(
    ws: Path, registry: PluginRegistry, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    for name in list(__import__("os").environ):
        if name.startswith("MEMWELL_"):
            monkeypatch.delenv(name)
    (ws / "memwell.toml").write_text("provider = 'none'\n[sync]\nwatch = false\n")
    memory = open_memory(ws, registry=registry)
    memory.sync()
    status = memory.status()
    assert status.search_mode == "fts-only"
    assert memory.search("Zanzibar", min_score=0.0)
    (ws / "memwell.toml").write_text("[backends.builtin]\nvector_engin = 'numpy'\n")
    with pytest.raises(ConfigError, match=r"backends\.builtin\.vector_engin"):
        open_memory(ws, registry=registry)


def test_non_builtin_wrapped_and_falls_back_to_builtin(
    ws: Path, registry: PluginRegistry, fakes: FakeBackends
) -> None:
    settings = make_settings(backend="flaky")
    memory = open_memory(ws, settings=settings, registry=registry)
    assert isinstance(memory.inner, FallbackMemoryManager)
    assert memory.primary_name == "flaky"
    assert len(fakes.created) == 1
    assert memory.status().backend == "flaky"  # primary still healthy for status

    hits = memory.search("Zanzibar codename", min_score=0.0)
    assert fakes.created[0].closed
    assert hits and hits[0].path == "memory/2026-01-02.md"
    status = memory.status()
    assert status.backend == "builtin"
    assert status.fallback is not None and status.fallback.from_ == "flaky"
    assert "flaky search engine crashed" in status.fallback.reason

    # the switch evicted the cache entry: the next open_memory tries the primary again
    again = open_memory(ws, settings=settings, registry=registry)
    assert again is not memory
    assert isinstance(again.inner, FallbackMemoryManager) and not again.primary_failed
    assert len(fakes.created) == 2
    assert open_memory(ws, settings=settings, registry=registry) is again
    memory.close()


def test_backend_create_failure_served_by_builtin(
    ws: Path, registry: PluginRegistry, fakes: FakeBackends
) -> None:
    fakes.create_error = FileNotFoundError("flaky binary not on PATH")
    memory = open_memory(ws, settings=make_settings(backend="flaky"), registry=registry)
    assert isinstance(memory.inner, FallbackMemoryManager) and memory.primary_failed
    memory.sync()
    hits = memory.search("tomatoes watering", min_score=0.0)
    assert hits and hits[0].path == "memory/projects.md"
    status = memory.status()
    assert status.backend == "builtin"
    assert status.fallback is not None
    assert "flaky binary not on PATH" in status.fallback.reason
    assert status.custom["fallback"]["disabled"] is True


def test_resolve_workspace(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert resolve_workspace(tmp_path) == tmp_path.resolve()
    monkeypatch.setenv("MEMWELL_WORKSPACE", str(tmp_path))
    assert resolve_workspace(None) == tmp_path.resolve()
    with pytest.raises(ConfigError, match="not a directory"):
        resolve_workspace(tmp_path / "missing")


def test_open_memory_is_importable_from_the_package_root() -> None:
    import memwell
    from memwell import close_all, open_memory
    from memwell.runtime.factory import close_all as factory_close_all
    from memwell.runtime.factory import open_memory as factory_open_memory

    assert open_memory is factory_open_memory and close_all is factory_close_all
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        memwell.nope  # noqa: B018
