"""PluginRegistry: explicit registration, resolved dicts, duplicates, broken plugins, allow-list."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from importlib import metadata
from types import SimpleNamespace
from typing import Any

import pytest
from memwell.contract.descriptors import EmbeddingProviderSpec, SearchBackend
from memwell.contract.errors import PluginError
from memwell.contract.hookspecs import hookimpl
from memwell.registry import plugins as plugins_mod
from memwell.registry.plugins import ALLOW_LIST_ENV, PluginRegistry, allowed_plugins
from memwell.testing import hash_provider_plugin


def _never(ctx: Any) -> Any:  # pragma: no cover - descriptors are never built here
    raise AssertionError("not built")


def backend_plugin(*names: str, calls: list[str] | None = None) -> SimpleNamespace:
    @hookimpl
    def memwell_search_backends() -> Iterator[SearchBackend]:
        if calls is not None:
            calls.append("backends")
        for name in names:
            yield SearchBackend(name=name, create=_never, description=f"{name} backend")

    return SimpleNamespace(memwell_search_backends=memwell_search_backends)


def provider_plugin(*ids: str) -> SimpleNamespace:
    @hookimpl
    def memwell_embedding_providers() -> list[EmbeddingProviderSpec]:
        return [
            EmbeddingProviderSpec(id=i, create=_never, default_model="m", transport="remote")
            for i in ids
        ]

    return SimpleNamespace(memwell_embedding_providers=memwell_embedding_providers)


def raising_plugin() -> SimpleNamespace:
    @hookimpl
    def memwell_search_backends() -> list[SearchBackend]:
        raise RuntimeError("kaput")

    return SimpleNamespace(memwell_search_backends=memwell_search_backends)


@pytest.fixture
def reg() -> PluginRegistry:
    return PluginRegistry(load_entry_points=False)


def test_explicit_registration_resolves_plain_dicts(reg: PluginRegistry) -> None:
    reg.register(backend_plugin("zeta", "alpha"), "pa")
    reg.register(provider_plugin("emb"), "pb")
    reg.register(hash_provider_plugin(), "hash")
    backends, providers = reg.backends, reg.providers
    assert type(backends) is dict and type(providers) is dict
    assert list(backends) == ["alpha", "zeta"]  # sorted by name
    assert all(isinstance(b, SearchBackend) for b in backends.values())
    assert backends["alpha"].description == "alpha backend"
    assert sorted(providers) == ["emb", "hash"]
    assert providers["hash"].transport == "local"
    reg.resolve()
    assert sorted(reg.infos["pa"].backends) == ["alpha", "zeta"]
    assert reg.infos["pb"].providers == ["emb"]
    assert reg.infos["pa"].status == "loaded"


def test_no_entry_points_when_disabled(reg: PluginRegistry) -> None:
    assert reg.backends == {} and reg.providers == {} and reg.infos == {}


def test_hooks_called_once_and_dicts_cached(reg: PluginRegistry) -> None:
    calls: list[str] = []
    reg.register(backend_plugin("a", calls=calls), "pa")
    first = reg.backends
    assert reg.backends is first
    reg.resolve()
    assert calls == ["backends"]


def test_register_and_unregister_invalidate(reg: PluginRegistry) -> None:
    reg.register(backend_plugin("a"), "pa")
    assert list(reg.backends) == ["a"]
    reg.register(backend_plugin("b"), "pb")
    assert list(reg.backends) == ["a", "b"]
    reg.unregister("pa")
    assert list(reg.backends) == ["b"]
    assert "pa" not in reg.infos


def test_duplicate_backend_name_disables_it_in_both_and_reports_both(
    reg: PluginRegistry,
) -> None:
    reg.register(backend_plugin("same", "own-a"), "first-plugin")
    reg.register(backend_plugin("same"), "second-plugin")
    reg.register(backend_plugin("other"), "bystander")
    assert list(reg.backends) == ["other", "own-a"]  # everything else still works
    for plugin in ("first-plugin", "second-plugin"):
        info = reg.infos[plugin]
        assert info.status == "conflict"
        assert info.error is not None and "'same'" in info.error
        assert "first-plugin" in info.error and "second-plugin" in info.error
        assert ALLOW_LIST_ENV in info.error
    assert reg.infos["bystander"].status == "loaded"
    assert reg.infos["first-plugin"].backends == ["own-a"]
    hint = reg.unknown_name_hint("backend", "same")
    assert "both are disabled" in hint and ALLOW_LIST_ENV in hint
    reg.unregister("second-plugin")  # resolving again after the conflict is gone
    assert "same" in reg.backends and not reg.conflicts


def test_duplicate_provider_ids_both_plugins(reg: PluginRegistry) -> None:
    reg.register(provider_plugin("dup"), "p-one")
    reg.register(provider_plugin("dup"), "p-two")
    assert reg.providers == {}
    assert reg.infos["p-one"].status == reg.infos["p-two"].status == "conflict"
    assert "p-one" in reg.unknown_name_hint("provider", "dup")


def test_selecting_a_conflicting_backend_names_the_conflict(
    reg: PluginRegistry, tmp_path: Any
) -> None:
    from memwell.contract.config import load_settings
    from memwell.contract.errors import ConfigError
    from memwell.runtime.factory import open_memory

    reg.register(backend_plugin("same"), "first-plugin")
    reg.register(backend_plugin("same"), "second-plugin")
    settings = load_settings(tmp_path, overrides={"backend": "same"}, registry=reg)
    with pytest.raises(
        ConfigError, match="registered by plugins 'first-plugin' and 'second-plugin'"
    ):
        open_memory(tmp_path, settings=settings, registry=reg)


@pytest.mark.parametrize(
    ("declared", "loads"),
    [(">=1.0,<2", True), ("~=1.0", True), (">=2", False), ("<1.0", False), ("nonsense", False)],
)
def test_declared_api_range_is_checked(reg: PluginRegistry, declared: str, loads: bool) -> None:
    plugin = backend_plugin("ranged")
    plugin.MEMWELL_PLUGIN_API = declared
    if loads:
        reg.register(plugin, "ranged-plugin")
        assert reg.infos["ranged-plugin"].api == declared
        assert "ranged" in reg.backends
    else:
        with pytest.raises(PluginError, match=r"MEMWELL_PLUGIN_API|plugin API"):
            reg.register(plugin, "ranged-plugin")
        assert "ranged" not in reg.backends


def test_incompatible_entry_point_is_reported_not_loaded(monkeypatch: pytest.MonkeyPatch) -> None:
    plugin = backend_plugin("future")
    plugin.MEMWELL_PLUGIN_API = ">=9"
    ep = SimpleNamespace(name="future-plugin", load=lambda: plugin, dist=None)
    monkeypatch.setattr(plugins_mod, "find_entry_points", lambda group: [ep])
    monkeypatch.delenv(ALLOW_LIST_ENV, raising=False)
    reg = PluginRegistry()
    info = reg.infos["future-plugin"]
    assert info.status == "incompatible"
    assert info.error is not None and ">=9" in info.error and "1.0" in info.error
    assert reg.backends == {}


def test_raising_hook_is_marked_error_and_skipped(
    reg: PluginRegistry, caplog: pytest.LogCaptureFixture
) -> None:
    reg.register(backend_plugin("good"), "good-plugin")
    reg.register(raising_plugin(), "broken-plugin")
    with caplog.at_level(logging.WARNING, logger="memwell.registry.plugins"):
        backends = reg.backends
    assert list(backends) == ["good"]
    info = reg.infos["broken-plugin"]
    assert info.status == "error"
    assert info.error is not None and "kaput" in info.error and "RuntimeError" in info.error
    assert reg.infos["good-plugin"].status == "loaded"
    assert "broken-plugin" in caplog.text


def test_misspelled_hook_rejected(reg: PluginRegistry) -> None:
    @hookimpl
    def memwell_search_backend() -> list[SearchBackend]:  # missing the final "s"
        return []

    plugin = SimpleNamespace(memwell_search_backend=memwell_search_backend)
    with pytest.raises(PluginError) as info:
        reg.register(plugin, "typo-plugin")
    assert "typo-plugin" in str(info.value)
    assert not reg.pm.is_registered(plugin)
    assert "typo-plugin" not in reg.infos
    reg.register(backend_plugin("ok"), "ok-plugin")  # the registry is still usable
    assert list(reg.backends) == ["ok"]


def test_hook_with_unknown_argument_rejected(reg: PluginRegistry) -> None:
    @hookimpl
    def memwell_before_answer(manager: Any, prompt: str, bogus_arg: int) -> None:
        return None

    with pytest.raises(PluginError):
        reg.register(SimpleNamespace(memwell_before_answer=memwell_before_answer), "bad-args")


def test_allow_list_parsing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(ALLOW_LIST_ENV, raising=False)
    assert allowed_plugins() is None
    monkeypatch.setenv(ALLOW_LIST_ENV, " builtin , ,hash")
    assert allowed_plugins() == {"builtin", "hash"}
    monkeypatch.setenv(ALLOW_LIST_ENV, "")
    assert allowed_plugins() == set()


def _installed_entry_points() -> list[str]:
    return sorted({ep.name for ep in metadata.entry_points(group="memwell")})


def test_allow_list_blocks_entry_points(monkeypatch: pytest.MonkeyPatch) -> None:
    names = _installed_entry_points()
    assert "builtin" in names, "the builtin backend must be installed for this test"
    monkeypatch.setenv(ALLOW_LIST_ENV, "builtin")
    reg = PluginRegistry()
    assert reg.infos["builtin"].status == "loaded"
    assert reg.infos["builtin"].distribution == "memwell-sqlite"
    assert "builtin" in reg.backends
    for name in names:
        if name != "builtin":
            assert reg.infos[name].status == "blocked"
            assert ALLOW_LIST_ENV in (reg.infos[name].error or "")
            assert not reg.pm.has_plugin(name)


def test_empty_allow_list_loads_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(ALLOW_LIST_ENV, "")
    reg = PluginRegistry()
    assert reg.backends == {} and reg.providers == {}
    assert {i.status for i in reg.infos.values()} <= {"blocked"}


def test_call_each_isolates_failures(reg: PluginRegistry, caplog: pytest.LogCaptureFixture) -> None:
    seen: list[str] = []

    @hookimpl
    def ok_before(prompt: str) -> str:  # accepts a subset of the arguments
        seen.append(prompt)
        return f"ctx for {prompt}"

    @hookimpl
    def bad_before(manager: Any, prompt: str, session_key: str | None) -> str:
        raise ValueError("boom in hook")

    reg.register(SimpleNamespace(memwell_before_answer=ok_before), "good-hook")
    reg.register(SimpleNamespace(memwell_before_answer=bad_before), "bad-hook")
    with caplog.at_level(logging.WARNING, logger="memwell.registry.plugins"):
        results = reg.call_each(
            "memwell_before_answer", manager=object(), prompt="hi", session_key=None
        )
    assert results == [("good-hook", "ctx for hi")]
    assert seen == ["hi"]
    assert "bad-hook" in caplog.text and "boom in hook" in caplog.text
    assert "memwell_before_answer" in caplog.text


def test_call_each_follows_pluggy_call_order(reg: PluginRegistry) -> None:
    def make(tag: str) -> SimpleNamespace:
        @hookimpl
        def memwell_before_answer(prompt: str) -> str:
            return tag

        return SimpleNamespace(memwell_before_answer=memwell_before_answer)

    for tag in ("one", "two", "three"):
        reg.register(make(tag), tag)
    args = {"manager": object(), "prompt": "p", "session_key": None}
    results = reg.call_each("memwell_before_answer", **args)
    assert [r for _, r in results] == reg.pm.hook.memwell_before_answer(**args)
    assert [name for name, _ in results] == ["three", "two", "one"]  # pluggy's LIFO order


def test_get_registry_is_a_lazy_singleton(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(plugins_mod, "_registry", None)
    built: list[int] = []

    class Counting(PluginRegistry):
        def __init__(self) -> None:
            built.append(1)
            super().__init__(load_entry_points=False)

    monkeypatch.setattr(plugins_mod, "PluginRegistry", Counting)
    first = plugins_mod.get_registry()
    assert plugins_mod.get_registry() is first
    assert built == [1]
    custom = PluginRegistry(load_entry_points=False)
    plugins_mod.set_registry(custom)
    assert plugins_mod.get_registry() is custom


def test_unknown_capability_disables_the_registration(reg: PluginRegistry) -> None:
    @hookimpl
    def memwell_search_backends() -> Iterator[SearchBackend]:
        yield SearchBackend(name="odd", create=_never, capabilities=frozenset({"telepathy"}))

    reg.register(SimpleNamespace(memwell_search_backends=memwell_search_backends), "odd-plugin")
    reg.register(backend_plugin("fine"), "fine-plugin")
    assert list(reg.backends) == ["fine"]
    info = reg.infos["odd-plugin"]
    assert info.status == "error" and info.error is not None and "telepathy" in info.error


def test_sessions_source_on_a_backend_without_it_is_said(
    reg: PluginRegistry, tmp_path: Any, caplog: pytest.LogCaptureFixture
) -> None:
    from memwell.contract.config import load_settings
    from memwell.runtime.factory import create_backend

    built: list[object] = []

    @hookimpl
    def memwell_search_backends() -> Iterator[SearchBackend]:
        yield SearchBackend(name="plain", create=built.append, capabilities=frozenset({"keyword"}))

    reg.register(SimpleNamespace(memwell_search_backends=memwell_search_backends), "plain")
    settings = load_settings(
        tmp_path, overrides={"backend": "plain", "sources": ["memory", "sessions"]}, registry=reg
    )
    with caplog.at_level(logging.WARNING, logger="memwell.runtime.factory"):
        create_backend("plain", settings, reg, tmp_path)
    assert built and "does not index sessions" in caplog.text
