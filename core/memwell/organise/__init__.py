"""Organised memory (seed 004): the Reflection Engine's entity graph, procedures, decay
scores and reflection log, all plain Markdown (and one JSON file) under ``memory/``, and the
Trigger Engine's query routing (:mod:`memwell.retrieval.routing`).

``reflect`` and ``ReflectResult`` are imported on first access, so the search path that
routes queries does not load the writer.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from memwell.organise.reflection import ReflectResult, reflect

__all__ = ["ReflectResult", "reflect"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        from memwell.organise import reflection as module

        return getattr(module, name)
    raise AttributeError(f"module 'memwell.organise' has no attribute {name!r}")
