"""What ``memwell search`` says on stderr about how a search ran.

A degraded search gets one ``note:`` line with the mode and the reasons. A backend fallback
gets a line of its own saying which backend failed and which one answered; with ``-v`` it is
followed by the original traceback of the failure (which the status only summarises).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import click

if TYPE_CHECKING:
    from memwell.contract.manager import MemorySearchManager


def backend_failure(manager: object) -> BaseException | None:
    """The exception that made ``open_memory``'s backend fall back, or ``None``.

    Looks through the recall cache (``inner``) to the
    :class:`~memwell.runtime.fallback.FallbackMemoryManager`.
    """
    from memwell.runtime.fallback import FallbackMemoryManager

    layer = manager
    for _ in range(8):  # the layers open_memory stacks; never loops on a self-reference
        if isinstance(layer, FallbackMemoryManager):
            return layer.last_error if layer.primary_failed else None
        inner = getattr(layer, "inner", None)
        if inner is None:
            return None
        layer = inner
    return None


def search_notes(
    report: dict[str, Any], manager: MemorySearchManager, *, verbose: bool
) -> list[str]:
    """The stderr lines for ``report`` (:func:`memwell.runtime.search_report.search_report`)."""
    lines: list[str] = []
    if report["degraded"]:
        lines.append(f"note: {report['mode']} mode: {report['degraded_reason']}")
    fallback = report["fallback"]
    if fallback is None:
        return lines
    lines.append(
        f"note: backend {fallback['from']!r} failed; the {fallback['to']!r} backend answered "
        "this search"
        + ("" if verbose else " (run 'memwell -v search ...' for the original traceback)")
    )
    error = backend_failure(manager)
    if verbose and error is not None:
        lines.append(f"traceback of the {fallback['from']!r} backend failure:")
        import traceback  # only for a verbose fallback: a search's start-up skips it

        lines.append("".join(traceback.format_exception(error)).rstrip())
    return lines


def print_search_notes(
    report: dict[str, Any], manager: MemorySearchManager, *, verbose: bool
) -> None:
    """Print :func:`search_notes` to stderr."""
    for line in search_notes(report, manager, verbose=verbose):
        click.echo(line, err=True)
