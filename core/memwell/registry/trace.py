"""Plugin hook-call tracing: ``MEMWELL_TRACE_PLUGINS=1`` prints every call of a plugin's hook
to stderr (as datasette's ``DATASETTE_TRACE_PLUGINS`` does): plugin, hook, arguments, what it
returned or raised, and how long it took.
"""

from __future__ import annotations

import os
import reprlib
import sys
import time
from collections.abc import Iterable, Mapping
from typing import Any, cast

import pluggy

TRACE_ENV = "MEMWELL_TRACE_PLUGINS"
_FALSE = frozenset({"", "0", "false", "no", "off"})
_repr = reprlib.Repr()
_repr.maxstring = _repr.maxother = 80
_repr.maxlist = 6


def tracing() -> bool:
    """Whether ``MEMWELL_TRACE_PLUGINS`` asks for hook-call tracing."""
    return os.environ.get(TRACE_ENV, "").strip().lower() not in _FALSE


def call_hook(
    impl: pluggy.HookImpl, hook_name: str, args: Mapping[str, Any], *, collect: bool = False
) -> Any:
    """Call one plugin's implementation of ``hook_name`` with ``args``, traced when asked.

    ``collect`` turns what it returns (an iterable, or ``None``) into a list, so a generator
    hook runs inside the trace.
    """
    if not tracing():
        result = impl.function(**args)
        return list(cast("Iterable[Any]", result or ())) if collect else result
    start = time.perf_counter()
    shown = ", ".join(f"{key}={_repr.repr(value)}" for key, value in args.items())
    call = f"{impl.plugin_name}.{hook_name}({shown})"
    try:
        result = impl.function(**args)
        if collect:
            result = list(cast("Iterable[Any]", result or ()))
    except BaseException as exc:
        _emit(call, f"raised {type(exc).__name__}: {exc}", start)
        raise
    _emit(call, f"-> {_repr.repr(result)}", start)
    return result


def _emit(call: str, outcome: str, start: float) -> None:
    elapsed = (time.perf_counter() - start) * 1000
    print(f"memwell trace: {call} {outcome} ({elapsed:.1f} ms)", file=sys.stderr, flush=True)
