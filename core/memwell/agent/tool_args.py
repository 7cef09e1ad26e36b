"""Tool-call arguments and failure payloads shared by every agent tool."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from memwell.contract.errors import (
    InvalidArgumentError,
    MemwellError,
    PathNotAllowedError,
    WriteRefusedError,
)
from memwell.util.lazy_import import lazy_logger

log = lazy_logger(__name__)


class BadArgument(InvalidArgumentError):
    """A tool argument has the wrong type or value; executors turn it into an ``error`` payload.

    Example::

        try:
            limit = optional_int("limit", args.get("limit"), 1, 20)
        except BadArgument as exc:
            return {"error": str(exc)}
    """


def error_text(exc: BaseException) -> str:
    """The message of ``exc`` for an ``error`` payload; its type name when the message is blank.

    Example::

        error_text(RuntimeError("  "))  # -> "RuntimeError"
    """
    return str(exc).strip() or type(exc).__name__


def optional_int(name: str, value: object, low: int, high: int | None = None) -> int | None:
    """``value`` as an int clamped to ``[low, high]``, or ``None`` when ``value`` is ``None``.

    Integral floats (``3.0``) are accepted, as JSON clients often send them.

    :param name: the argument's name, for the error message.
    :raises BadArgument: ``value`` is a bool, a non-integral number or not a number.
    """
    if value is None:
        return None
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int):
        raise BadArgument(f"{name} must be an integer, got {value!r}")
    clamped = max(low, value)
    return clamped if high is None else min(high, clamped)


def parse_arguments(arguments: object) -> Mapping[str, Any]:
    """A tool call's arguments as a mapping; ``arguments`` may be the raw JSON string.

    A blank string means no arguments.

    :raises BadArgument: the string is not valid JSON, or the arguments are not an object.
    """
    parsed = arguments
    if isinstance(arguments, str):
        try:
            parsed = json.loads(arguments) if arguments.strip() else {}
        except (ValueError, RecursionError) as exc:
            raise BadArgument(f"arguments are not valid JSON: {exc}") from exc
    if not isinstance(parsed, Mapping):
        raise BadArgument(f"arguments must be a JSON object, got {type(parsed).__name__}")
    return parsed


def refusal(tool: str, exc: Exception, **extra: Any) -> dict[str, Any]:
    """The refusal payload for ``exc``; errors memwell did not raise on purpose are logged."""
    if isinstance(exc, WriteRefusedError):
        reason = exc.reason
    elif isinstance(exc, PathNotAllowedError):
        reason = "not_allowed"
    else:
        reason = "failed"
    if not isinstance(exc, MemwellError):
        log.warning("%s failed: %s: %s", tool, type(exc).__name__, exc)
    payload: dict[str, Any] = {**extra, "error": error_text(exc), "reason": reason}
    if reason == "disabled":
        payload["disabled"] = True
    return payload
