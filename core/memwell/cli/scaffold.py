"""``memwell plugin new``: a plugin package that installs and passes conformance as generated.

The templates live in ``memwell/templates/<kind>/``; ``PKG`` in a path becomes the import
package ``memwell_<name>``, and ``$name``, ``$Class``, ``$memwell_version``, ``$api_major``
and ``$api_next`` are substituted in every file.
"""

from __future__ import annotations

import re
from importlib import resources
from pathlib import Path
from string import Template
from typing import TYPE_CHECKING

from memwell import __version__
from memwell.contract.api_version import PLUGIN_API_VERSION
from memwell.contract.errors import ConfigError

if TYPE_CHECKING:
    from importlib.abc import Traversable

KINDS = ("backend", "provider")
_NAME = re.compile(r"[a-z][a-z0-9_]{0,38}")


def _files(root: Traversable, prefix: str = "") -> list[tuple[str, Traversable]]:
    found: list[tuple[str, Traversable]] = []
    for entry in sorted(root.iterdir(), key=lambda e: e.name):
        rel = f"{prefix}{entry.name}"
        if entry.is_dir():
            found += _files(entry, f"{rel}/")
        elif entry.name.endswith(".tmpl"):
            found.append((rel.removesuffix(".tmpl"), entry))
    return found


def scaffold_plugin(name: str, kind: str, parent: Path) -> Path:
    """Write the package ``memwell-<name>`` of ``kind`` under ``parent``; returns its folder.

    Raises :class:`ConfigError` for a name that is not a lowercase identifier, an unknown
    kind, or a folder that already exists (nothing is overwritten).
    """
    if not _NAME.fullmatch(name):
        raise ConfigError(
            f"plugin name {name!r} must be a lowercase identifier (letters, digits, _), "
            "starting with a letter"
        )
    if kind not in KINDS:
        raise ConfigError(f"unknown plugin kind {kind!r}; expected one of {', '.join(KINDS)}")
    target = parent / f"memwell-{name}"
    if target.exists():
        raise ConfigError(f"{target} already exists; choose another name or folder")
    major = int(PLUGIN_API_VERSION.split(".")[0])
    values = {
        "name": name,
        "Class": "".join(part.capitalize() for part in name.split("_")),
        "memwell_version": __version__,
        "api_major": str(major),
        "api_next": str(major + 1),
    }
    package = f"memwell_{name}"
    for rel, template in _files(resources.files("memwell") / "templates" / kind):
        path = target / rel.replace("PKG", package)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(Template(template.read_text("utf-8")).substitute(values), "utf-8")
    (target / package / "py.typed").write_text("", "utf-8")
    return target
