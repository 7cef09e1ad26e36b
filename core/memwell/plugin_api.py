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

PLUGIN_API_VERSION = "1.0"
"""The plugin API this memwell provides (major.minor)."""

API_ATTRIBUTE = "MEMWELL_PLUGIN_API"
"""The module attribute a plugin declares its supported range in."""


def declared_api(plugin: object) -> str | None:
    """The range ``plugin`` declares, or ``None`` when it declares none."""
    value = getattr(plugin, API_ATTRIBUTE, None)
    return None if value is None else str(value)


def api_mismatch(declared: str | None) -> str | None:
    """Why a plugin declaring ``declared`` cannot load here, or ``None`` when it can."""
    if declared is None:
        return None
    from packaging.specifiers import InvalidSpecifier, SpecifierSet
    from packaging.version import Version

    try:
        spec = SpecifierSet(declared)
    except InvalidSpecifier:
        return f"{API_ATTRIBUTE} = {declared!r} is not a version range (e.g. '>=1.0,<2')"
    if Version(PLUGIN_API_VERSION) in spec:
        return None
    return (
        f"supports memwell plugin API {declared}, but this memwell provides "
        f"{PLUGIN_API_VERSION}: upgrade the plugin or memwell"
    )
