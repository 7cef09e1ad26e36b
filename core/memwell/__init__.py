"""memwell: pluggable, Markdown-first memory search for AI agents.

``from memwell import open_memory`` is the entry point for library use; it is imported on
first access, so ``import memwell`` stays cheap for plugins that only need its submodules.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .factory import close_all, open_memory
    from .writing import writer

__version__ = "0.1.0"
__all__ = ["__version__", "close_all", "open_memory", "writer"]


def __getattr__(name: str) -> Any:
    if name in ("open_memory", "close_all"):
        from . import factory

        return getattr(factory, name)
    if name == "writer":
        from .writing import writer

        return writer
    raise AttributeError(f"module 'memwell' has no attribute {name!r}")
