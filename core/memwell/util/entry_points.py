"""The installed entry points of one group, read without importing :mod:`importlib.metadata`.

Importing :mod:`importlib.metadata` costs about 25 ms (it pulls in ``email``, ``zipfile``,
``csv`` and more): a tenth of a one-shot search, spent only to learn which plugins are
installed. Entry points are declared in the ``entry_points.txt`` of each ``*.dist-info`` or
``*.egg-info`` directory on :data:`sys.path`, so :func:`find_entry_points` reads those files
directly, the way :func:`importlib.metadata.entry_points` finds them: ``sys.path`` in order,
the first distribution of each normalised name winning. Where distributions could live
somewhere this reader does not look (a zip file or ``.egg`` on ``sys.path``, or a meta-path
finder other than the standard one that provides distributions), it asks
:mod:`importlib.metadata` instead, so the answer is the same either way.
"""

from __future__ import annotations

import functools
import importlib
import importlib.machinery
import os
import re
import sys
from collections.abc import Iterator
from typing import Any

import msgspec

_VALUE = re.compile(r"(?P<module>[\w.]+)\s*(:\s*(?P<attr>[\w.]+)\s*)?((?P<extras>\[.*\])\s*)?$")
_SUFFIXES = (".dist-info", ".egg-info")


class EntryPointRef(msgspec.Struct, frozen=True):
    """One entry point: ``name = value`` in ``group``, declared by ``distribution``."""

    name: str
    value: str
    group: str
    distribution: str | None = None
    version: str | None = None

    @property
    def module(self) -> str:
        """The module the value names (``pkg.mod`` of ``pkg.mod:attr``)."""
        return self._target()[0]

    @property
    def attr(self) -> str | None:
        """The attribute path after the colon, if any."""
        return self._target()[1]

    def _target(self) -> tuple[str, str | None]:
        match = _VALUE.match(self.value)
        if match is None:
            raise ValueError(f"entry point {self.name!r} has an invalid value {self.value!r}")
        return match["module"], match["attr"]

    def load(self) -> Any:
        """Import the module and return the object the value names."""
        module_name, attr = self._target()
        module = importlib.import_module(module_name)
        return functools.reduce(getattr, attr.split(".") if attr else [], module)


def find_entry_points(group: str) -> list[EntryPointRef]:
    """Every installed entry point of ``group``, as :func:`importlib.metadata.entry_points`
    lists them (one distribution per normalised name, the first on ``sys.path``)."""
    if not _readable_here(sys.path):
        return _from_importlib(group)
    found: list[EntryPointRef] = []
    seen: set[str] = set()
    for directory in _distribution_dirs(sys.path):
        name = _normalized(os.path.basename(directory))
        if name in seen:
            continue
        seen.add(name)
        text = _read(os.path.join(directory, "entry_points.txt"))
        if text is None:
            continue
        points = [(n, v) for section, n, v in _pairs(text) if section == group]
        if not points:
            continue
        dist, version = _name_and_version(directory)
        found.extend(EntryPointRef(n, v, group, dist, version) for n, v in points)
    return found


def _readable_here(paths: list[str]) -> bool:
    """Whether every distribution importlib.metadata would find is in a plain directory."""
    for finder in sys.meta_path:
        if finder is not importlib.machinery.PathFinder and hasattr(finder, "find_distributions"):
            return False
    for path in paths:
        root = path or "."
        if os.path.isdir(root):
            if root.lower().endswith(".egg"):
                return False
        elif os.path.exists(root):
            return False  # a zip archive or egg file
    return True


def _distribution_dirs(paths: list[str]) -> Iterator[str]:
    """The metadata directories on ``paths``, in importlib.metadata's search order."""
    for path in paths:
        root = path or "."
        try:
            children = os.listdir(root)
        except OSError:
            continue
        for child in children:
            if child.lower().endswith(_SUFFIXES):
                yield os.path.join(path, child)


def _normalized(stem: str) -> str:
    name = stem.lower().rpartition(".")[0].partition("-")[0]
    return re.sub(r"[-_.]+", "-", name).replace("-", "_")


def _read(path: str) -> str | None:
    try:
        with open(path, encoding="utf-8") as handle:
            return handle.read()
    except (OSError, UnicodeDecodeError):
        return None


def _pairs(text: str) -> Iterator[tuple[str | None, str, str]]:
    """``(section, name, value)`` of an ``entry_points.txt`` (lines without ``=`` skipped)."""
    section = None
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if line.startswith("[") and line.endswith("]"):
            section = line.strip("[]")
            continue
        name, sep, value = line.partition("=")
        if sep:
            yield section, name.strip(), value.strip()


def _name_and_version(directory: str) -> tuple[str | None, str | None]:
    """``Name`` and ``Version`` from the metadata file's headers."""
    for filename in ("METADATA", "PKG-INFO"):
        text = _read(os.path.join(directory, filename))
        if text is None:
            continue
        headers: dict[str, str] = {}
        for line in text.splitlines():
            if not line.strip():
                break
            key, sep, value = line.partition(":")
            if sep and key in ("Name", "Version") and key not in headers:
                headers[key] = value.strip()
        return headers.get("Name"), headers.get("Version")
    return None, None


def _from_importlib(group: str) -> list[EntryPointRef]:
    from importlib import metadata

    found = []
    for ep in metadata.entry_points(group=group):
        dist = getattr(ep, "dist", None)
        meta = dist.metadata if dist is not None else None
        found.append(
            EntryPointRef(
                ep.name,
                ep.value,
                group,
                meta["Name"] if meta is not None else None,
                meta["Version"] if meta is not None else None,
            )
        )
    return found
