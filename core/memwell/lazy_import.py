"""Modules imported on first use, for heavy dependencies a command may never touch.

A keyword-only one-shot search never computes with a vector, yet the modules it passes
through (the embedding runtime, the recall cache, the builtin backend's store) use NumPy, whose
import costs as much as the search. They bind NumPy as a :func:`lazy_module` instead::

    if TYPE_CHECKING:
        import numpy as np
    else:
        np = lazy_module("numpy")

and the first attribute read imports it. Type checkers see the real module.
"""

from __future__ import annotations

import importlib
import types
from typing import Any


class LazyModule(types.ModuleType):
    """Stands for module ``name`` until an attribute is read, then becomes a copy of its
    namespace (later reads are plain attribute reads)."""

    def __getattr__(self, attr: str) -> Any:
        module = importlib.import_module(self.__name__)
        self.__dict__.update(vars(module))
        return getattr(module, attr)


def lazy_module(name: str) -> Any:
    """A stand-in for ``import name`` that imports on the first attribute read."""
    return LazyModule(name)
