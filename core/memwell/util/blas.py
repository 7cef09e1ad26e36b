"""Cap the BLAS threads NumPy linear algebra uses."""

from __future__ import annotations

import contextlib
import threading
from typing import Any

_controller: Any = None
_lock = threading.Lock()


def blas_threads(limit: int | None) -> Any:
    """A context manager that limits BLAS to ``limit`` threads (``None``: no change)."""
    global _controller
    if limit is None:
        return contextlib.nullcontext()
    with _lock:
        if _controller is None:
            from threadpoolctl import ThreadpoolController

            _controller = ThreadpoolController()
    return _controller.limit(limits=limit, user_api="blas")


def single_blas_thread() -> Any:
    """A context manager that limits BLAS to one thread for the calls inside it.

    A query-sized product (one mat-vec, or a forward pass over a few dozen tokens) is too
    small to split: a second BLAS thread only adds wake-up latency, and on a busy machine the
    threads spin-wait for each other (measured here: a 15 ms query encoding took 435 ms with
    two threads while other processes held the cores).
    """
    return blas_threads(1)
