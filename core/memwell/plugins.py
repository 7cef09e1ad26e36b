"""Plugin discovery and the resolved registries of backends and providers.

Entry points in the ``memwell`` group are loaded once, lazily, on the first call to
:func:`get_registry`. ``MEMWELL_LOAD_PLUGINS`` (comma-separated entry-point names) restricts
which ones load; set it to an empty string to load none. A plugin that fails to import is
reported in :attr:`PluginRegistry.infos` and skipped, and so is one whose declared plugin API
range (:mod:`memwell.plugin_api`) excludes this memwell. Two plugins that register the same
backend name or provider id both lose that name, and both are reported; everything else works.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from importlib import metadata
from typing import Any, TypeVar, cast

import pluggy

from . import hookspecs
from .descriptors import EmbeddingProviderSpec, RerankerSpec, SearchBackend, TextGeneratorSpec
from .errors import PluginApiMismatchError, PluginError
from .plugin_api import api_mismatch, declared_api

log = logging.getLogger(__name__)

ENTRY_POINT_GROUP = "memwell"
ALLOW_LIST_ENV = "MEMWELL_LOAD_PLUGINS"

_D = TypeVar("_D", SearchBackend, EmbeddingProviderSpec, TextGeneratorSpec, RerankerSpec)


@dataclass
class PluginInfo:
    """What ``memwell plugins`` shows for one plugin."""

    name: str
    distribution: str | None = None
    version: str | None = None
    status: str = "loaded"  # loaded | error | blocked | incompatible | conflict
    error: str | None = None
    api: str | None = None  # the plugin API range it declares (None: undeclared)
    backends: list[str] = field(default_factory=list)
    providers: list[str] = field(default_factory=list)
    text_generators: list[str] = field(default_factory=list)
    rerankers: list[str] = field(default_factory=list)

    def names(self, kind: str) -> list[str]:
        """The names of what this plugin provides of ``kind`` (backend, provider, ...)."""
        by_kind = {
            "backend": self.backends,
            "provider": self.providers,
            "text generator": self.text_generators,
            "reranker": self.rerankers,
        }
        return by_kind[kind]


def allowed_plugins() -> set[str] | None:
    """The allow-list from ``MEMWELL_LOAD_PLUGINS``; ``None`` means everything is allowed."""
    raw = os.environ.get(ALLOW_LIST_ENV)
    if raw is None:
        return None
    return {part.strip() for part in raw.split(",") if part.strip()}


class PluginRegistry:
    """A pluggy manager plus the backend and provider dicts resolved from it.

    Tests build their own registry with ``load_entry_points=False`` and register plugins
    explicitly; production code uses :func:`get_registry`.
    """

    def __init__(self, *, load_entry_points: bool = True) -> None:
        self.pm = pluggy.PluginManager("memwell")
        self.pm.add_hookspecs(hookspecs)
        self.infos: dict[str, PluginInfo] = {}
        self.conflicts: dict[tuple[str, str], str] = {}
        """``(kind, name)`` -> why that name is disabled (two plugins register it)."""
        self._backends: dict[str, SearchBackend] | None = None
        self._providers: dict[str, EmbeddingProviderSpec] | None = None
        self._text_generators: dict[str, TextGeneratorSpec] | None = None
        self._rerankers: dict[str, RerankerSpec] | None = None
        self._lock = threading.Lock()
        if load_entry_points:
            self._load_entry_points()

    def register(self, plugin: object, name: str, *, info: PluginInfo | None = None) -> None:
        """Register a plugin module or object under ``name``; invalidates the resolved dicts.

        A plugin whose declared API range excludes this memwell raises :class:`PluginError`.
        """
        declared = declared_api(plugin)
        mismatch = api_mismatch(declared)
        if mismatch is not None:
            raise PluginApiMismatchError(f"plugin {name!r} {mismatch}", plugin=name)
        try:
            self.pm.register(plugin, name=name)
            self.pm.check_pending()
        except Exception as exc:
            if self.pm.is_registered(plugin):
                self.pm.unregister(plugin)
            raise PluginError(f"plugin {name!r} is invalid: {exc}", plugin=name) from exc
        self.infos[name] = info or PluginInfo(name=name)
        self.infos[name].api = declared
        self._backends = self._providers = self._text_generators = self._rerankers = None

    def unregister(self, name: str) -> None:
        """Remove a registered plugin by name."""
        plugin = self.pm.get_plugin(name)
        if plugin is not None:
            self.pm.unregister(plugin)
        self.infos.pop(name, None)
        self._backends = self._providers = self._text_generators = self._rerankers = None

    def _load_entry_points(self) -> None:
        allowed = allowed_plugins()
        for ep in sorted(metadata.entry_points(group=ENTRY_POINT_GROUP), key=lambda e: e.name):
            dist = getattr(ep, "dist", None)
            info = PluginInfo(
                name=ep.name,
                distribution=dist.metadata["Name"] if dist is not None else None,
                version=dist.version if dist is not None else None,
            )
            if allowed is not None and ep.name not in allowed:
                info.status = "blocked"
                info.error = f"not in {ALLOW_LIST_ENV}"
                self.infos[ep.name] = info
                continue
            try:
                self.register(ep.load(), ep.name, info=info)
            except PluginError as exc:
                info.status = "incompatible" if isinstance(exc, PluginApiMismatchError) else "error"
                info.error = str(exc)
                self.infos[ep.name] = info
                log.warning("memwell plugin %r not loaded: %s", ep.name, exc)
            except Exception as exc:  # a broken plugin never takes the host down
                info.status = "error"
                info.error = f"{type(exc).__name__}: {exc}"
                self.infos[ep.name] = info
                log.warning("memwell plugin %r failed to load: %s", ep.name, info.error)

    def _collect(
        self, hook: pluggy.HookCaller, key: Callable[[_D], str], kind: str
    ) -> dict[str, _D]:
        found: dict[str, _D] = {}
        owners: dict[str, list[str]] = {}
        for impl in hook.get_hookimpls():
            owner = impl.plugin_name
            try:
                items = list(cast("Iterable[_D]", impl.function() or ()))
            except Exception as exc:
                self._mark_error(owner, f"{hook.name} raised {type(exc).__name__}: {exc}")
                continue
            for item in items:
                name = key(item)
                owners.setdefault(name, []).append(owner)
                found.setdefault(name, item)
        for name, names_owners in owners.items():
            if len(names_owners) > 1:
                del found[name]
                self._mark_conflict(kind, name, names_owners)
                continue
            info = self.infos.setdefault(names_owners[0], PluginInfo(name=names_owners[0]))
            info.names(kind).append(name)
        return dict(sorted(found.items()))

    def _mark_conflict(self, kind: str, name: str, plugins: list[str]) -> None:
        listed = " and ".join(repr(p) for p in plugins)
        keep = ",".join(p for p in self.infos if p not in plugins[1:])
        error = (
            f"{kind} {name!r} is registered by plugins {listed}; both are disabled. Uninstall "
            f"one, or load only the one you want with {ALLOW_LIST_ENV} (e.g. "
            f"{ALLOW_LIST_ENV}={keep})"
        )
        self.conflicts[(kind, name)] = error
        for plugin in plugins:
            info = self.infos.setdefault(plugin, PluginInfo(name=plugin))
            info.status = "conflict"
            info.error = error
        log.warning("memwell: %s", error)

    def _mark_error(self, plugin: str, error: str) -> None:
        info = self.infos.setdefault(plugin, PluginInfo(name=plugin))
        info.status = "error"
        info.error = error
        log.warning("memwell plugin %r: %s", plugin, error)

    @property
    def backends(self) -> dict[str, SearchBackend]:
        """Backends by name, resolved once."""
        with self._lock:
            if self._backends is None:
                self._reset_names("backend")
                self._backends = self._collect(
                    self.pm.hook.memwell_search_backends, lambda b: b.name, "backend"
                )
            return self._backends

    @property
    def providers(self) -> dict[str, EmbeddingProviderSpec]:
        """Embedding providers by id, resolved once."""
        with self._lock:
            if self._providers is None:
                self._reset_names("provider")
                self._providers = self._collect(
                    self.pm.hook.memwell_embedding_providers, lambda p: p.id, "provider"
                )
            return self._providers

    @property
    def text_generators(self) -> dict[str, TextGeneratorSpec]:
        """Text generators by id, resolved once."""
        with self._lock:
            if self._text_generators is None:
                self._reset_names("text generator")
                self._text_generators = self._collect(
                    self.pm.hook.memwell_text_generators, lambda t: t.id, "text generator"
                )
            return self._text_generators

    @property
    def rerankers(self) -> dict[str, RerankerSpec]:
        """Rerankers by id, resolved once."""
        with self._lock:
            if self._rerankers is None:
                self._reset_names("reranker")
                self._rerankers = self._collect(
                    self.pm.hook.memwell_rerankers, lambda r: r.id, "reranker"
                )
            return self._rerankers

    def _reset_names(self, kind: str) -> None:
        for conflict in [c for c in self.conflicts if c[0] == kind]:
            del self.conflicts[conflict]
        for info in self.infos.values():
            info.names(kind).clear()

    def resolve(self) -> None:
        """Resolve every registry now (fills each :class:`PluginInfo`'s lists)."""
        _ = self.backends, self.providers, self.text_generators, self.rerankers

    def call_each(self, hook_name: str, **kwargs: Any) -> list[tuple[str, Any]]:
        """Call every implementation of a hook separately, isolating failures.

        Returns ``(plugin_name, result)`` pairs; an implementation that raises is logged with
        the plugin's name and left out, so one broken plugin cannot break the agent loop.
        """
        hook: pluggy.HookCaller = getattr(self.pm.hook, hook_name)
        results: list[tuple[str, Any]] = []
        for impl in reversed(hook.get_hookimpls()):
            args = {name: kwargs[name] for name in impl.argnames if name in kwargs}
            try:
                results.append((impl.plugin_name, impl.function(**args)))
            except Exception as exc:
                log.warning(
                    "memwell plugin %r failed in %s: %s: %s",
                    impl.plugin_name,
                    hook_name,
                    type(exc).__name__,
                    exc,
                )
        return results

    def unknown_name_hint(self, kind: str, name: str) -> str:
        """Why ``name`` is not available: disabled by a conflict, or what is installed."""
        conflict = self.conflicts.get((kind, name))
        if conflict is not None:
            return conflict
        names = self.backends if kind == "backend" else self.providers
        return f"installed: {', '.join(names) or 'none'}"

    def plugin_names(self) -> Iterable[str]:
        return self.infos.keys()


_registry: PluginRegistry | None = None
_registry_lock = threading.Lock()


def get_registry() -> PluginRegistry:
    """The process-wide registry; entry points are loaded on the first call only."""
    global _registry
    with _registry_lock:
        if _registry is None:
            _registry = PluginRegistry()
        return _registry


def set_registry(registry: PluginRegistry | None) -> None:
    """Replace (or with ``None`` reset) the process-wide registry; for tests and embedding."""
    global _registry
    with _registry_lock:
        _registry = registry
