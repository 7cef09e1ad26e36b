"""Every plugin configuration key is documented, in the README's Configuration section or in
the plugin's own README (core keys: tests/integration/test_readme_examples.py)."""

from __future__ import annotations

import dataclasses
import re
import sys
import typing
from collections.abc import Iterator
from pathlib import Path

import msgspec
import pytest
from memwell.registry.plugins import get_registry

ROOT = Path(__file__).resolve().parents[2]


def _struct_type(annotation: object) -> type | None:
    """The struct (or dataclass) type inside ``annotation`` (``X | None`` too), if any."""
    for candidate in (annotation, *typing.get_args(annotation)):
        if isinstance(candidate, type) and (
            issubclass(candidate, msgspec.Struct) or dataclasses.is_dataclass(candidate)
        ):
            return candidate
    return None


def config_keys(model: type, section: str = "") -> Iterator[tuple[str, str]]:
    """``(section, key)`` for every leaf key of a settings model, as written in TOML."""
    if issubclass(model, msgspec.Struct):
        hints = typing.get_type_hints(model, include_extras=True)
        fields = [(f.encode_name, hints[f.name]) for f in msgspec.structs.fields(model)]
    elif dataclasses.is_dataclass(model):
        hints = typing.get_type_hints(model, include_extras=True)
        fields = [(f.name, hints[f.name]) for f in dataclasses.fields(model)]
    else:  # a pydantic model
        fields = [(n, f.annotation) for n, f in model.model_fields.items()]  # type: ignore[attr-defined]
    for name, annotation in fields:
        inner = _struct_type(annotation)
        if inner is not None:
            yield from config_keys(inner, f"{section}.{name}".lstrip("."))
        else:
            yield section, name


def configuration_section() -> str:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    start = text.index("\n## Configuration")
    return text[start : text.index("\n## ", start + 1)]


def documented_keys(text: str) -> set[tuple[str, str]]:
    """``(section, key)`` pairs a README documents: in a TOML block (``key = ...``, also
    commented out, and inline tables) or a table row ``| `[section]` | `key` (...), ...``."""
    found: set[tuple[str, str]] = set()
    section = ""
    for line in text.splitlines():
        header = re.match(r"\s*\[([\w.-]+)\]", line)
        if header:
            section = header.group(1)
            continue
        row = re.match(r"\|\s*`\[([\w.<>-]+)\]`[^|]*\|(.*)\|\s*$", line)
        if row:
            for key in re.findall(r"`([a-z_][\w]*)`", row.group(2)):
                found.add((row.group(1), key))
            continue
        assignment = re.match(r"\s*#?\s*([a-z_]\w*)\s*=\s*\[?(\{[^}]*\})?", line)
        if assignment:
            key, inline = assignment.groups()
            found.add((section, key))
            for inner in re.findall(r"([a-z_]\w*)\s*=", inline or ""):
                found.add((f"{section}.{key}".lstrip("."), inner))
    return found


def _plugin_models() -> list[tuple[str, type]]:
    registry = get_registry()
    models = []
    for kind, specs in (("backends", registry.backends), ("providers", registry.providers)):
        for name, spec in specs.items():
            if spec.config_model is not None:
                models.append((f"{kind}.{name}", spec.config_model))
    return models


def plugin_docs(model: type) -> list[str]:
    """Where a plugin documents its keys: its distribution's README, else (an example
    without one) its config model's docstring."""
    package = Path(sys.modules[model.__module__.split(".")[0]].__file__ or "").parent
    readme = package.parent / "README.md"
    return [readme.read_text(encoding="utf-8") if readme.is_file() else model.__doc__ or ""]


@pytest.mark.parametrize(("section", "model"), _plugin_models(), ids=lambda v: str(v)[:40])
def test_every_plugin_key_is_documented(section: str, model: type) -> None:
    readmes = [configuration_section(), *plugin_docs(model)]
    documented = {key for text in readmes for _, key in documented_keys(text)}
    documented |= {key for text in readmes for key in re.findall(r"`([a-z_]\w*)`", text)}
    missing = [key for _, key in config_keys(model) if key not in documented]
    assert not missing, f"[{section}] keys documented nowhere: {missing}"
