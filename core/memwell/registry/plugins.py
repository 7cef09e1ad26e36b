"""Plugin discovery and the resolved registries of backends and providers.

Entry points in the ``memwell`` group are found on the first call to :func:`get_registry`
and imported lazily: a lookup by name (:meth:`PluginRegistry.lookup`, and the ``auto``
order of :meth:`PluginRegistry.auto_candidates`) imports only the entry points that provide
that name, as the plugin index (:mod:`memwell.registry.index`) remembers from earlier imports,
plus any entry point the index does not know; everything that looks at the registry as a
whole (:attr:`~PluginRegistry.backends`, :attr:`~PluginRegistry.infos`, hooks called with
:meth:`~PluginRegistry.call_each`) imports them all first. ``MEMWELL_LOAD_PLUGINS``
(comma-separated entry-point names) restricts which ones load; set it to an empty string to
load none. A plugin that fails to import is
reported in :attr:`PluginRegistry.infos` and skipped, and so is one whose declared plugin API
range (:mod:`memwell.contract.api_version`) excludes this memwell. Two plugins that register the
same backend name or provider id both lose that name, and both are reported; everything else works.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterable
from typing import Any, cast

import msgspec
import pluggy

from memwell.contract import hookspecs
from memwell.contract.api_version import api_mismatch, declared_api
from memwell.contract.descriptors import (
    EmbeddingProviderSpec,
    RerankerSpec,
    SearchBackend,
    TextGeneratorSpec,
)
from memwell.contract.errors import PluginApiMismatchError, PluginError
from memwell.registry.index import KINDS, PluginIndex, Provides
from memwell.registry.trace import call_hook
from memwell.util.entry_points import find_entry_points
from memwell.util.lazy_import import lazy_logger

log = lazy_logger(__name__)

ENTRY_POINT_GROUP = "memwell"
ALLOW_LIST_ENV = "MEMWELL_LOAD_PLUGINS"


def _name_of(kind: str, descriptor: Any) -> str:
    """A backend's name, a provider's, text generator's or reranker's id."""
    return str(descriptor.name if kind == "backend" else descriptor.id)


_HOOKS = {
    "backend": "memwell_search_backends",
    "provider": "memwell_embedding_providers",
    "text generator": "memwell_text_generators",
    "reranker": "memwell_rerankers",
}


class PluginInfo(msgspec.Struct):
    """What ``memwell plugins`` shows for one plugin."""

    name: str
    distribution: str | None = None
    version: str | None = None
    status: str = "loaded"  # loaded | error | blocked | incompatible | conflict
    error: str | None = None
    api: str | None = None  # the plugin API range it declares (None: undeclared)
    backends: list[str] = msgspec.field(default_factory=list)
    providers: list[str] = msgspec.field(default_factory=list)
    text_generators: list[str] = msgspec.field(default_factory=list)
    rerankers: list[str] = msgspec.field(default_factory=list)

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
    explicitly; production code uses :func:`get_registry`. ``index`` is the plugin index
    that makes entry-point loading lazy (default: the user's cache file).
    """

    def __init__(self, *, load_entry_points: bool = True, index: PluginIndex | None = None) -> None:
        self.pm = pluggy.PluginManager("memwell")
        self.pm.add_hookspecs(hookspecs)
        self._infos: dict[str, PluginInfo] = {}
        self.conflicts: dict[tuple[str, str], str] = {}
        """``(kind, name)`` -> why that name is disabled (two plugins register it)."""
        self._resolved: dict[str, dict[str, Any]] = {}
        self._yields: dict[tuple[str, str], list[Any] | Exception] = {}
        """(plugin, kind) -> what its hook yielded (or raised): each hook runs once."""
        self._pending: dict[str, Any] = {}
        """Allowed entry points not imported yet, by name."""
        self._index = index or PluginIndex()
        self._records: dict[str, Provides | None] = {}
        self._lock = threading.RLock()
        if load_entry_points:
            self._find_entry_points()

    def register(self, plugin: object, name: str, *, info: PluginInfo | None = None) -> None:
        """Register a plugin module or object under ``name``; invalidates the resolved dicts.

        A plugin whose declared API range excludes this memwell raises :class:`PluginError`.
        """
        declared = declared_api(plugin)
        mismatch = api_mismatch(declared)
        if mismatch is not None:
            raise PluginApiMismatchError(f"plugin {name!r} {mismatch}", plugin=name)
        with self._lock:
            try:
                self.pm.register(plugin, name=name)
                self.pm.check_pending()
            except Exception as exc:
                if self.pm.is_registered(plugin):
                    self.pm.unregister(plugin)
                raise PluginError(f"plugin {name!r} is invalid: {exc}", plugin=name) from exc
            self._infos[name] = info or PluginInfo(name=name)
            self._infos[name].api = declared
            self._forget(name)

    def unregister(self, name: str) -> None:
        """Remove a registered plugin by name."""
        with self._lock:
            plugin = self.pm.get_plugin(name)
            if plugin is not None:
                self.pm.unregister(plugin)
            self._infos.pop(name, None)
            self._pending.pop(name, None)
            self._forget(name)

    def _forget(self, name: str) -> None:
        """Drop the resolved dicts and plugin ``name``'s hook results."""
        self._resolved.clear()
        for key in [k for k in self._yields if k[0] == name]:
            del self._yields[key]

    # -- entry points -----------------------------------------------------------------------

    def _find_entry_points(self) -> None:
        """Note every entry point (the allow-list blocks some); none is imported here."""
        allowed = allowed_plugins()
        for ep in sorted(find_entry_points(ENTRY_POINT_GROUP), key=lambda e: e.name):
            info = PluginInfo(
                name=ep.name,
                distribution=getattr(ep, "distribution", None),
                version=getattr(ep, "version", None),
            )
            self._infos[ep.name] = info
            if allowed is not None and ep.name not in allowed:
                info.status = "blocked"
                info.error = f"not in {ALLOW_LIST_ENV}"
                continue
            self._pending[ep.name] = ep

    def _load(self, names: Iterable[str]) -> None:
        """Import the pending entry points ``names`` and index what they register."""
        loaded = []
        for name in list(names):
            ep = self._pending.pop(name, None)
            if ep is not None and self._load_one(ep):
                loaded.append(ep)
        for ep in loaded:
            provides = self._provides(ep.name)
            module = getattr(ep, "module", None)
            if provides is not None and isinstance(module, str):
                self._index.store(ep, module, provides)
        self._index.save()

    def _record(self, ep: Any) -> Provides | None:
        """The index's record of a pending entry point (checked once per registry)."""
        if ep.name not in self._records:
            self._records[ep.name] = self._index.lookup(ep)
        return self._records[ep.name]

    def _load_one(self, ep: Any) -> bool:
        info = self._infos[ep.name]
        try:
            self.register(ep.load(), ep.name, info=info)
        except PluginError as exc:
            info.status = "incompatible" if isinstance(exc, PluginApiMismatchError) else "error"
            info.error = str(exc)
            log.warning("memwell plugin %r not loaded: %s", ep.name, exc)
        except Exception as exc:  # a broken plugin never takes the host down
            info.status = "error"
            info.error = f"{type(exc).__name__}: {exc}"
            log.warning("memwell plugin %r failed to load: %s", ep.name, info.error)
        else:
            return True
        return False

    def _yielded(self, kind: str, impl: pluggy.HookImpl) -> list[Any] | Exception:
        """What one plugin's hook for ``kind`` yields (or raised), called once per plugin."""
        key = (impl.plugin_name, kind)
        if key not in self._yields:
            try:
                self._yields[key] = call_hook(impl, _HOOKS[kind], {}, collect=True)
            except Exception as exc:
                self._yields[key] = exc
        return self._yields[key]

    def _provides(self, plugin_name: str) -> Provides | None:
        """What one registered plugin registers, by kind; ``None`` if a hook raises."""
        provides: Provides = {}
        for kind in KINDS:
            names: dict[str, int | None] = provides.setdefault(kind, {})
            hook: pluggy.HookCaller = getattr(self.pm.hook, _HOOKS[kind])
            for impl in hook.get_hookimpls():
                if impl.plugin_name != plugin_name:
                    continue
                items = self._yielded(kind, impl)
                if isinstance(items, Exception):
                    return None
                for item in items:
                    names[_name_of(kind, item)] = getattr(item, "auto_priority", None)
        return provides

    def load_all(self) -> None:
        """Import every pending entry point now."""
        with self._lock:
            if self._pending:
                self._load(list(self._pending))

    def _load_for(self, kind: str, name: str) -> None:
        """Import the entry points that may provide ``name``: those the index says do, and
        those it does not know; all of them when the index proved stale."""
        if not self._pending:
            return
        claimed = False
        wanted = []
        for ep_name, ep in self._pending.items():
            provides = self._record(ep)
            if provides is None or name in provides[kind]:
                claimed = claimed or provides is not None
                wanted.append(ep_name)
        self._load(wanted)
        if claimed and name not in self._names(kind) and (kind, name) not in self.conflicts:
            self.load_all()

    # -- resolution -------------------------------------------------------------------------

    def _collect(self, kind: str) -> dict[str, Any]:
        found: dict[str, Any] = {}
        owners: dict[str, list[str]] = {}
        hook: pluggy.HookCaller = getattr(self.pm.hook, _HOOKS[kind])
        for impl in hook.get_hookimpls():
            owner = impl.plugin_name
            items = self._yielded(kind, impl)
            if isinstance(items, Exception):
                error = f"{type(items).__name__}: {items}"
                self._mark_error(owner, f"{hook.name} raised {error}")
                continue
            for item in items:
                name = _name_of(kind, item)
                owners.setdefault(name, []).append(owner)
                found.setdefault(name, item)
        for name, names_owners in owners.items():
            if len(names_owners) > 1:
                del found[name]
                self._mark_conflict(kind, name, names_owners)
                continue
            info = self._infos.setdefault(names_owners[0], PluginInfo(name=names_owners[0]))
            info.names(kind).append(name)
        return dict(sorted(found.items()))

    def _mark_conflict(self, kind: str, name: str, plugins: list[str]) -> None:
        listed = " and ".join(repr(p) for p in plugins)
        keep = ",".join(p for p in self._infos if p not in plugins[1:])
        error = (
            f"{kind} {name!r} is registered by plugins {listed}; both are disabled. Uninstall "
            f"one, or load only the one you want with {ALLOW_LIST_ENV} (e.g. "
            f"{ALLOW_LIST_ENV}={keep})"
        )
        self.conflicts[(kind, name)] = error
        for plugin in plugins:
            info = self._infos.setdefault(plugin, PluginInfo(name=plugin))
            info.status = "conflict"
            info.error = error
        log.warning("memwell: %s", error)

    def _mark_error(self, plugin: str, error: str) -> None:
        info = self._infos.setdefault(plugin, PluginInfo(name=plugin))
        info.status = "error"
        info.error = error
        log.warning("memwell plugin %r: %s", plugin, error)

    def _names(self, kind: str) -> dict[str, Any]:
        """``kind``'s descriptors from the plugins registered so far, resolved once."""
        with self._lock:
            resolved = self._resolved.get(kind)
            if resolved is None:
                self._reset_names(kind)
                resolved = self._resolved[kind] = self._collect(kind)
            return resolved

    @property
    def infos(self) -> dict[str, PluginInfo]:
        """Every plugin by name, with its status (imports every entry point first)."""
        self.load_all()
        return self._infos

    @property
    def backends(self) -> dict[str, SearchBackend]:
        """Backends by name, resolved once (imports every entry point first)."""
        self.load_all()
        return cast("dict[str, SearchBackend]", self._names("backend"))

    @property
    def providers(self) -> dict[str, EmbeddingProviderSpec]:
        """Embedding providers by id, resolved once (imports every entry point first)."""
        self.load_all()
        return cast("dict[str, EmbeddingProviderSpec]", self._names("provider"))

    @property
    def text_generators(self) -> dict[str, TextGeneratorSpec]:
        """Text generators by id, resolved once (imports every entry point first)."""
        self.load_all()
        return cast("dict[str, TextGeneratorSpec]", self._names("text generator"))

    @property
    def rerankers(self) -> dict[str, RerankerSpec]:
        """Rerankers by id, resolved once (imports every entry point first)."""
        self.load_all()
        return cast("dict[str, RerankerSpec]", self._names("reranker"))

    def lookup(self, kind: str, name: str) -> Any:
        """The descriptor of ``kind`` (``backend``, ``provider``, ``text generator``) named
        ``name``, or ``None``; imports only the entry points that may provide it."""
        with self._lock:
            self._load_for(kind, name)
            return self._names(kind).get(name)

    def backend(self, name: str) -> SearchBackend | None:
        """Backend ``name`` (see :meth:`lookup`)."""
        found: SearchBackend | None = self.lookup("backend", name)
        return found

    def provider(self, name: str) -> EmbeddingProviderSpec | None:
        """Embedding provider ``name`` (see :meth:`lookup`)."""
        found: EmbeddingProviderSpec | None = self.lookup("provider", name)
        return found

    def text_generator(self, name: str) -> TextGeneratorSpec | None:
        """Text generator ``name`` (see :meth:`lookup`)."""
        found: TextGeneratorSpec | None = self.lookup("text generator", name)
        return found

    def auto_candidates(self, kind: str) -> list[str]:
        """The names of ``kind`` that ``auto`` may select, in the order to try them (lowest
        ``auto_priority`` first, then by name). Imports only the entry points the index does
        not know; :meth:`lookup` imports each candidate's when it is tried."""
        with self._lock:
            self._load([n for n, ep in self._pending.items() if self._record(ep) is None])
            order = {
                name: spec.auto_priority
                for name, spec in self._names(kind).items()
                if spec.auto_priority is not None
            }
            for ep in self._pending.values():
                provides = self._record(ep) or {}
                for name, priority in provides.get(kind, {}).items():
                    if priority is not None:
                        order.setdefault(name, priority)
        return sorted(order, key=lambda name: (order[name], name))

    def _reset_names(self, kind: str) -> None:
        for conflict in [c for c in self.conflicts if c[0] == kind]:
            del self.conflicts[conflict]
        for info in self._infos.values():
            info.names(kind).clear()

    def resolve(self) -> None:
        """Resolve every registry now (fills each :class:`PluginInfo`'s lists)."""
        _ = self.backends, self.providers, self.text_generators, self.rerankers

    def call_each(self, hook_name: str, **kwargs: Any) -> list[tuple[str, Any]]:
        """Call every implementation of a hook separately, isolating failures.

        Returns ``(plugin_name, result)`` pairs; an implementation that raises is logged with
        the plugin's name and left out, so one broken plugin cannot break the agent loop.
        Every entry point is imported first.
        """
        self.load_all()
        hook: pluggy.HookCaller = getattr(self.pm.hook, hook_name)
        results: list[tuple[str, Any]] = []
        for impl in reversed(hook.get_hookimpls()):
            args = {name: kwargs[name] for name in impl.argnames if name in kwargs}
            try:
                results.append((impl.plugin_name, call_hook(impl, hook_name, args)))
            except Exception as exc:
                log.warning(
                    "memwell plugin %r failed in %s: %s: %s",
                    impl.plugin_name,
                    hook_name,
                    type(exc).__name__,
                    exc,
                )
        return results

    def installed(self, kind: str) -> list[str]:
        """Every usable name of ``kind`` (imports every entry point first)."""
        self.load_all()
        return list(self._names(kind))

    def unknown_name_hint(self, kind: str, name: str) -> str:
        """Why ``name`` is not available: disabled by a conflict, or what is installed."""
        installed = self.installed(kind)
        conflict = self.conflicts.get((kind, name))
        if conflict is not None:
            return conflict
        return f"installed: {', '.join(installed) or 'none'}"

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
