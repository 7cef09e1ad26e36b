"""memwell: pluggable, Markdown-first memory search for AI agents.

``from memwell import open_memory`` is the entry point for library use; it is imported on
first access, so ``import memwell`` stays cheap for plugins that only need its submodules.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from memwell.util import moved_paths

if TYPE_CHECKING:
    from memwell.runtime.factory import close_all, open_memory
    from memwell.writing import writer

moved_paths.install()  # the module paths of 0.1 still import, with a DeprecationWarning

__version__ = "0.1.0"
__all__ = ["__version__", "close_all", "open_memory", "writer"]


def __getattr__(name: str) -> Any:
    if name in ("open_memory", "close_all"):
        from memwell.runtime import factory

        return getattr(factory, name)
    if name == "writer":
        from memwell.writing import writer

        return writer
    raise AttributeError(f"module 'memwell' has no attribute {name!r}")
