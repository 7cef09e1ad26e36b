"""memwell-qmd: the ``qmd`` search backend, driving the qmd CLI (npm ``@tobilu/qmd``)."""

from __future__ import annotations

from .config import QmdCollection, QmdConfig, QmdModels, QmdTimeouts
from .errors import QmdError
from .manager import QmdMemoryManager

__all__ = [
    "QmdCollection",
    "QmdConfig",
    "QmdError",
    "QmdMemoryManager",
    "QmdModels",
    "QmdTimeouts",
]
