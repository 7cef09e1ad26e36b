"""Shared test helpers for the lancedb backend (imported by name: tests have no package)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from memwell_lancedb.manager import LanceMemoryManager

Build = Callable[..., LanceMemoryManager]
"""``build(workspace, provider="hash", lance={...}, **settings)`` (the ``build`` fixture)."""


def write(root: Path, files: dict[str, str]) -> Path:
    """Write ``files`` (relative path -> text) under ``root``."""
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return root
