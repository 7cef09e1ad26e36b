"""Modules imported on first use, for heavy dependencies a command may never touch.

A keyword-only one-shot search never computes with a vector, yet the modules it passes
through (the embedding runtime, the recall cache, the builtin backend's store) use NumPy, whose
import costs as much as the search. They bind NumPy as a :func:`lazy_module` instead::

    if TYPE_CHECKING:
        import numpy as np
    else:
        np = lazy_module("numpy")

and the first attribute read imports it. Type checkers see the real module.

Regular expressions are the same kind of cost: a character class over the CJK blocks takes
milliseconds to compile, and the modules a search passes through hold dozens of them that only
indexing, redaction or a CJK query uses. Those modules bind them with :func:`lazy_pattern`,
which compiles on first use. Loggers likewise: :func:`lazy_logger` imports :mod:`logging` (with
``traceback`` and the rest) only when a module first logs, which a search usually never does.
"""

from __future__ import annotations

import importlib
import re
import sys
import types
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, cast

if TYPE_CHECKING:
    import logging


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


class LazyPattern:
    """Stands for ``re.compile(pattern, flags)`` until an attribute is read, then holds the
    compiled pattern's attributes and becomes a :class:`CompiledPattern` (later reads are
    plain attribute reads, without this class's ``__getattr__`` hook)."""

    def __init__(self, pattern: str, flags: int) -> None:
        self._source = (pattern, flags)

    def __getattr__(self, attr: str) -> Any:
        compiled = re.compile(*self._source)
        for name in dir(compiled):
            if not name.startswith("_"):
                self.__dict__[name] = getattr(compiled, name)
        object.__setattr__(self, "__class__", CompiledPattern)
        return getattr(compiled, attr)


class CompiledPattern:
    """A :class:`LazyPattern` after its first use: the compiled pattern's attributes."""


def lazy_pattern(pattern: str, flags: int = 0) -> re.Pattern[str]:
    """A stand-in for ``re.compile(pattern, flags)`` that compiles on first use; type checkers
    see a :class:`re.Pattern` (use its methods and attributes; it is not a ``re.Pattern``
    instance for ``isinstance`` or the ``re`` module's functions)."""
    return cast("re.Pattern[str]", LazyPattern(pattern, flags))


def is_compiled(pattern: re.Pattern[str]) -> bool:
    """Whether ``pattern`` (a :func:`lazy_pattern` or a real one) is compiled already."""
    return not isinstance(cast(object, pattern), LazyPattern)


class LazyLogger:
    """Stands for ``logging.getLogger(name)`` until a method is used, then imports
    :mod:`logging` (running a setup :func:`defer_logging_setup` left first) and delegates.

    The package's top logger (``memwell`` for ``memwell.agent.tools``) gets a
    :class:`logging.NullHandler`, as a library's should: without one, a record nobody asked
    for goes to stderr through logging's last-resort handler. Records still reach every
    handler the application (or the ``memwell`` CLI) configures."""

    def __init__(self, name: str) -> None:
        self._name = name

    def __getattr__(self, attr: str) -> Any:
        import logging

        while _pending_setup:
            _pending_setup.pop()()
        package = logging.getLogger(self._name.partition(".")[0])
        if not any(isinstance(h, logging.NullHandler) for h in package.handlers):
            package.addHandler(logging.NullHandler())
        logger = logging.getLogger(self._name)
        self.__dict__.update({m: getattr(logger, m) for m in _LOG_METHODS})
        return getattr(logger, attr)


_LOG_METHODS = ("debug", "info", "warning", "error", "exception", "critical", "log")
_pending_setup: list[Callable[[], None]] = []


def lazy_logger(name: str) -> logging.Logger:
    """A stand-in for ``logging.getLogger(name)`` that imports :mod:`logging` on first use.

    A search that logs nothing never imports ``logging`` (with ``traceback`` and the rest, a
    few milliseconds of a one-shot command's start-up). Type checkers see a
    :class:`logging.Logger`."""
    return cast("logging.Logger", LazyLogger(name))


def defer_logging_setup(setup: Callable[[], None]) -> None:
    """Run ``setup`` (e.g. ``logging.basicConfig``) before the first :func:`lazy_logger`
    record, or now if ``logging`` is imported already (someone may be logging through it)."""
    if "logging" in sys.modules:
        setup()
    else:
        _pending_setup.append(setup)


def lazy_exports(module_name: str, where: Mapping[str, str]) -> Callable[[str], Any]:
    """A module ``__getattr__`` for ``module_name`` that imports each name on first use.

    ``where`` maps a name to ``"submodule"`` or ``"submodule:attribute"`` of ``memwell``
    (``"sqlite_errors:"``, an empty attribute after the colon, is the submodule itself).
    """

    def attribute(name: str) -> Any:
        target = where.get(name)
        if target is None:
            raise AttributeError(f"module {module_name!r} has no attribute {name!r}")
        module, colon, attr = target.partition(":")
        found = importlib.import_module(f"memwell.{module}")
        return found if colon and not attr else getattr(found, attr or name)

    return attribute
