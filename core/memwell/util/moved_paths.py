"""Old import paths, kept for one release: core was regrouped into layer packages.

``import memwell.config`` (and every other path in :data:`MOVED_MODULES`) still works, with a
:class:`DeprecationWarning` naming the new path, and gives the very module at the new path, so
``isinstance`` checks and monkeypatching agree. Names that moved out of a module that still
exists are served by a module ``__getattr__`` (:func:`moved_attributes`). Plugins should import
from :mod:`memwell.plugin`, whose names do not move.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import sys
import warnings
from collections.abc import Callable, Mapping, Sequence
from types import ModuleType
from typing import Any

MOVED_MODULES: dict[str, str] = {
    "memwell.backend": "memwell.runtime.backend",
    "memwell.blas": "memwell.util.blas",
    "memwell.config": "memwell.contract.config",
    "memwell.config_validation": "memwell.contract.config_validation",
    "memwell.context.tool": "memwell.agent.compress_tool",
    "memwell.conversation_eval": "memwell.evaluation.conversation",
    "memwell.core_files": "memwell.agent.core_files",
    "memwell.debounce": "memwell.util.debounce",
    "memwell.descriptors": "memwell.contract.descriptors",
    "memwell.embedding_runtime": "memwell.providers.runtime",
    "memwell.embeddings": "memwell.contract.embeddings",
    "memwell.entry_points": "memwell.util.entry_points",
    "memwell.errors": "memwell.contract.errors",
    "memwell.factory": "memwell.runtime.factory",
    "memwell.fallback": "memwell.runtime.fallback",
    "memwell.flush": "memwell.agent.flush",
    "memwell.hookspecs": "memwell.contract.hookspecs",
    "memwell.lazy_import": "memwell.util.lazy_import",
    "memwell.manager": "memwell.contract.manager",
    "memwell.mcp_http": "memwell.mcp.http_guard",
    "memwell.mcp_jsonrpc": "memwell.mcp.jsonrpc",
    "memwell.mcp_server": "memwell.mcp.server",
    "memwell.mcp_token": "memwell.mcp.token",
    "memwell.models": "memwell.contract.models",
    "memwell.organise.routing": "memwell.retrieval.routing",
    "memwell.organise.tool": "memwell.agent.reflect_tool",
    "memwell.plugin_api": "memwell.contract.api_version",
    "memwell.plugin_index": "memwell.registry.index",
    "memwell.plugin_trace": "memwell.registry.trace",
    "memwell.plugins": "memwell.registry.plugins",
    "memwell.prompt": "memwell.agent.prompt",
    "memwell.provider_fallback": "memwell.providers.fallback_record",
    "memwell.recall.protocols": "memwell.contract.recall_protocols",
    "memwell.records": "memwell.contract.records",
    "memwell.remote": "memwell.providers.remote",
    "memwell.rerank": "memwell.runtime.rerank",
    "memwell.retrieval.file_scan": "memwell.sources.file_scan",
    "memwell.retry": "memwell.providers.retry",
    "memwell.scaffold": "memwell.cli.scaffold",
    "memwell.search_report": "memwell.runtime.search_report",
    "memwell.session_capture": "memwell.agent.session_capture",
    "memwell.slugs": "memwell.writing.slugs",
    "memwell.sqlite_errors": "memwell.util.sqlite_errors",
    "memwell.sync_gate": "memwell.util.sync_gate",
    "memwell.textgen.base": "memwell.contract.text_generator",
    "memwell.tool_schemas": "memwell.agent.tool_schemas",
    "memwell.tools": "memwell.agent.tools",
    "memwell.writing.agent_tools": "memwell.agent.write_tools",
    "memwell.writing.supersede": "memwell.retrieval.supersede_marker",
}
"""Old module path -> new module path."""


def _warn(old: str, new: str) -> None:
    warnings.warn(
        f"{old} moved to {new}; import it from there (or from memwell.plugin): the old path "
        "goes away in the next release",
        DeprecationWarning,
        stacklevel=3,
    )


class _AliasLoader(importlib.abc.Loader):
    """Loads an old path as the module at its new path (the same object)."""

    def __init__(self, new: str) -> None:
        self.new = new
        self._module: ModuleType | None = None

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType:
        self._module = importlib.import_module(self.new)
        self._spec = self._module.__spec__
        return self._module

    def exec_module(self, module: ModuleType) -> None:
        # The import system set the old spec on the shared module: give it back its own.
        module.__spec__ = self._spec


class _MovedFinder(importlib.abc.MetaPathFinder):
    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        new = MOVED_MODULES.get(fullname)
        if new is None:
            return None
        _warn(fullname, new)
        return importlib.machinery.ModuleSpec(fullname, _AliasLoader(new))


def install() -> None:
    """Serve the old paths (idempotent; ``import memwell`` calls it)."""
    if not any(isinstance(finder, _MovedFinder) for finder in sys.meta_path):
        sys.meta_path.append(_MovedFinder())


def moved_attributes(module_name: str, where: Mapping[str, str] | str) -> Callable[[str], Any]:
    """A module ``__getattr__`` for names that moved out of ``module_name``: ``where`` maps a
    name to its new module, or is one module that holds every name that left."""

    def attribute(name: str) -> Any:
        new = where if isinstance(where, str) else where.get(name)
        if new is not None and not name.startswith("__"):
            module = importlib.import_module(new)
            if hasattr(module, name):
                _warn(f"{module_name}.{name}", f"{new}.{name}")
                return getattr(module, name)
        raise AttributeError(f"module {module_name!r} has no attribute {name!r}")

    return attribute
