""":func:`open_memory`: settings -> backend + provider -> a cached manager."""

from __future__ import annotations

import os
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from memwell.contract.config import MemwellSettings, load_settings, plugin_config
from memwell.contract.descriptors import BackendContext
from memwell.contract.errors import BackendUnavailableError, ConfigError, ProviderError
from memwell.contract.manager import MemorySearchManager
from memwell.providers.runtime import EmbeddingRuntime
from memwell.recall.manager import RecallCachedManager
from memwell.registry.plugins import PluginRegistry, get_registry
from memwell.runtime.fallback import FallbackMemoryManager
from memwell.textgen.router import configured_router
from memwell.util.lazy_import import lazy_logger

if TYPE_CHECKING:
    from memwell.curation.tracking import RecallTracker

log = lazy_logger(__name__)

BUILTIN_BACKEND = "builtin"

_cache: dict[tuple[str, str, int], MemorySearchManager] = {}
_cache_lock = threading.Lock()


def resolve_workspace(workspace: str | os.PathLike[str] | None) -> Path:
    """The workspace directory: the argument, else ``MEMWELL_WORKSPACE``, else the cwd."""
    raw = workspace if workspace is not None else os.environ.get("MEMWELL_WORKSPACE") or "."
    path = Path(raw).expanduser().resolve()
    if not path.is_dir():
        raise ConfigError(f"workspace {path} is not a directory")
    return path


def create_backend(
    name: str,
    settings: MemwellSettings,
    registry: PluginRegistry,
    workspace: Path,
    purpose: Literal["default", "status"] = "default",
) -> MemorySearchManager:
    """Build backend ``name`` directly: no fallback, no cache (``memwell doctor`` uses it)."""
    spec = registry.backend(name)
    if spec is None:
        hint = registry.unknown_name_hint("backend", name)
        raise ConfigError(
            f"unknown backend {name!r} in config key 'backend' ({hint})",
            key="backend",
        )
    missing = sorted({s for s in settings.sources if s == "sessions"} - spec.capabilities)
    if missing and spec.capabilities:
        log.warning(
            "backend %r does not index %s: config key 'sources' asks for it, it is ignored",
            name,
            ", ".join(missing),
        )
    cfg = plugin_config(spec.config_model, settings.backends.get(name), f"backends.{name}")
    return spec.create(backend_context(workspace, settings, registry, cfg, purpose))


def backend_context(
    workspace: Path,
    settings: MemwellSettings,
    registry: PluginRegistry,
    plugin_config: Any = None,
    purpose: Literal["default", "status"] = "default",
) -> BackendContext:
    """What a backend is built from: the workspace, settings, a fresh embedding runtime."""
    return BackendContext(
        workspace=workspace,
        settings=settings,
        embeddings=EmbeddingRuntime(settings, registry, workspace),
        registry=registry,
        plugin_config=plugin_config,
        purpose=purpose,
    )


def open_memory(
    workspace: str | os.PathLike[str] | None = None,
    *,
    settings: MemwellSettings | None = None,
    overrides: Mapping[str, Any] | None = None,
    config_file: str | os.PathLike[str] | None = None,
    registry: PluginRegistry | None = None,
    purpose: Literal["default", "status"] = "default",
) -> MemorySearchManager:
    """Open the memory of ``workspace`` with the configured backend and provider.

    Settings come from ``settings`` if given, else from the layered config (see
    :func:`memwell.contract.config.load_settings`) with ``overrides`` on top. A non-builtin backend
    is wrapped in :class:`FallbackMemoryManager` with the builtin backend as fallback, and every
    manager in the recall cache (:class:`~memwell.recall.manager.RecallCachedManager`, settings
    ``[cache.recall]``), which also records each search's hits (``[recall_tracking]``,
    :mod:`memwell.curation.tracking`). Managers are cached per (workspace, settings);
    ``purpose="status"`` is never cached.

    Example::

        from memwell import open_memory
        memory = open_memory("~/agent", overrides={"provider": "none"})
        for hit in memory.search("deploy checklist"):
            print(hit.path, hit.start_line, hit.score)
    """
    ws = resolve_workspace(workspace)
    reg = registry or get_registry()
    if settings is None:
        settings = load_settings(
            ws,
            config_file=Path(config_file) if config_file is not None else None,
            overrides=overrides,
            registry=reg,
        )
    if purpose == "status":
        inner = _open(ws, settings, reg, purpose)
        return RecallCachedManager(inner, settings, tracker=_tracker(ws, settings))
    key = (str(ws), settings.fingerprint(), id(reg))
    with _cache_lock:
        cached = _cache.get(key)
        if cached is not None and not getattr(cached, "closed", False):
            return cached
        inner = _open(ws, settings, reg, purpose, cache_key=key)
        if settings.rerank.provider != "none":
            from memwell.runtime.rerank import RerankingManager, open_reranker

            inner = RerankingManager(inner, open_reranker(settings, reg, ws), settings)
        router = configured_router(settings, reg, ws)
        manager = RecallCachedManager(
            inner, settings, tracker=_tracker(ws, settings), router=router
        )
        _cache[key] = manager
        return manager


def _tracker(ws: Path, settings: MemwellSettings) -> RecallTracker | None:
    """The workspace's recall tracker, unless ``[recall_tracking] enabled = false``."""
    if not settings.recall_tracking.enabled:
        return None
    from memwell.curation.tracking import RecallTracker

    return RecallTracker.for_workspace(ws, settings)


def _open(
    ws: Path,
    settings: MemwellSettings,
    reg: PluginRegistry,
    purpose: Literal["default", "status"],
    cache_key: tuple[str, str, int] | None = None,
) -> MemorySearchManager:
    if settings.backend == BUILTIN_BACKEND:
        return create_backend(BUILTIN_BACKEND, settings, reg, ws, purpose)
    primary: MemorySearchManager | None = None
    error: BaseException | None = None
    try:
        primary = create_backend(settings.backend, settings, reg, ws, purpose)
    except (ConfigError, ProviderError):
        raise  # not the backend's fault: the builtin backend would fail the same way
    except Exception as exc:
        log.warning("backend %r unavailable (%s); using builtin", settings.backend, exc)
        error = exc

    def evict(wrapper: FallbackMemoryManager) -> None:
        if cache_key is None:
            return
        with _cache_lock:
            entry = _cache.get(cache_key)
            if isinstance(entry, RecallCachedManager) and entry.inner is wrapper:
                del _cache[cache_key]

    def open_fallback() -> MemorySearchManager:
        if reg.backend(BUILTIN_BACKEND) is None:
            raise BackendUnavailableError("it is not installed (pip install memwell-sqlite)")
        return create_backend(BUILTIN_BACKEND, settings, reg, ws, purpose)

    return FallbackMemoryManager(
        primary,
        open_fallback,
        primary_name=settings.backend,
        primary_error=error,
        on_switch=evict,
        workspace=str(ws),
    )


def close_all() -> None:
    """Close every cached manager (for process teardown and tests)."""
    with _cache_lock:
        managers = list(_cache.values())
        _cache.clear()
    for manager in managers:
        try:
            manager.close()
        except Exception as exc:
            log.debug("close raised %s", exc)
