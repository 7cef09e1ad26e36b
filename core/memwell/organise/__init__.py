"""Organised memory (seed 004): the Reflection Engine's entity graph, procedures, decay
scores and reflection log, all plain Markdown (and one JSON file) under ``memory/``."""

from __future__ import annotations

from .reflect import ReflectResult, reflect

__all__ = ["ReflectResult", "reflect"]
