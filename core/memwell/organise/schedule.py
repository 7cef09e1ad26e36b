"""Reflection on a schedule: what ``memwell watch`` runs when ``[reflect] every_minutes`` is set."""

from __future__ import annotations

from collections.abc import Callable

from memwell.contract.errors import MemwellError
from memwell.organise.reflection import ReflectResult, reflect
from memwell.writing.writer import MemoryWriter


def reflect_every(
    writer: MemoryWriter,
    seconds: float,
    *,
    wait: Callable[[float], bool],
    report: Callable[[ReflectResult | MemwellError], None],
) -> None:
    """Run :func:`reflect` on ``writer`` every ``seconds`` until ``wait`` says stop.

    :param writer: the writer reflect writes through (its channel, ``watch`` for the
        command, goes to the audit log).
    :param wait: waits ``seconds``; True to stop (``threading.Event.wait``).
    :param report: gets each run's result, or the error that stopped that run (the next
        run still happens: a refused write or a locked file may pass).
    """
    while not wait(seconds):
        try:
            result = reflect(writer)
        except MemwellError as exc:
            report(exc)
        else:
            report(result)
