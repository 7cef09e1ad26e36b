"""The plugin API version and the check of the range a plugin declares.

A plugin module (the one its entry point names) may declare the plugin API versions it supports
as a PEP 440 specifier string::

    MEMWELL_PLUGIN_API = ">=1.0,<2"

memwell raises the minor version when it adds to the plugin API and the major version when it
changes or removes something. A plugin whose range excludes :data:`PLUGIN_API_VERSION` is not
loaded, and ``memwell plugins`` / ``memwell doctor`` say why; a plugin that declares nothing is
loaded and shown as ``undeclared``.
"""

from __future__ import annotations

import operator
import re
from collections.abc import Callable

PLUGIN_API_VERSION = "1.0"
"""The plugin API this memwell provides (major.minor)."""

API_ATTRIBUTE = "MEMWELL_PLUGIN_API"
"""The module attribute a plugin declares its supported range in."""


def declared_api(plugin: object) -> str | None:
    """The range ``plugin`` declares, or ``None`` when it declares none."""
    value = getattr(plugin, API_ATTRIBUTE, None)
    return None if value is None else str(value)


_CLAUSE = re.compile(r"\s*(>=|<=|==|!=|<|>)\s*(\d+(?:\.\d+)*)\s*")
_COMPARE: dict[str, Callable[[tuple[int, ...], tuple[int, ...]], bool]] = {
    ">=": operator.ge,
    "<=": operator.le,
    "==": operator.eq,
    "!=": operator.ne,
    "<": operator.lt,
    ">": operator.gt,
}


def _release(version: str, width: int) -> tuple[int, ...]:
    parts = tuple(int(p) for p in version.split("."))
    return parts + (0,) * (width - len(parts))


def _simple_range_contains(declared: str) -> bool | None:
    """Whether a range of plain comparisons (``>=1.0,<2``) contains :data:`PLUGIN_API_VERSION`,
    compared as release numbers (what PEP 440 does for versions without pre-, post- or dev
    parts); ``None`` for any other form. The ranges plugins declare take this path, so
    loading one never imports ``packaging``."""
    found = [_CLAUSE.fullmatch(part) for part in declared.split(",")]
    clauses = [match.groups() for match in found if match is not None]
    if len(clauses) != len(found):
        return None
    for op, version in clauses:
        width = max(version.count("."), PLUGIN_API_VERSION.count(".")) + 1
        if not _COMPARE[op](_release(PLUGIN_API_VERSION, width), _release(version, width)):
            return False
    return True


def api_mismatch(declared: str | None) -> str | None:
    """Why a plugin declaring ``declared`` cannot load here, or ``None`` when it can."""
    if declared is None:
        return None
    contains = _simple_range_contains(declared)
    if contains is None:
        from packaging.specifiers import InvalidSpecifier, SpecifierSet
        from packaging.version import Version

        try:
            spec = SpecifierSet(declared)
        except InvalidSpecifier:
            return f"{API_ATTRIBUTE} = {declared!r} is not a version range (e.g. '>=1.0,<2')"
        contains = Version(PLUGIN_API_VERSION) in spec
    if contains:
        return None
    return (
        f"supports memwell plugin API {declared}, but this memwell provides "
        f"{PLUGIN_API_VERSION}: upgrade the plugin or memwell"
    )
