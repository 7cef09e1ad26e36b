"""Validating configuration data with a settings model, and errors that name key and source.

A model is a :mod:`msgspec` struct (memwell's own settings are
:class:`~memwell.contract.records.Record` subclasses), a dataclass (validated by msgspec as well)
or, for third-party plugins, a pydantic model: pydantic then validates it. This module never imports
pydantic; a pydantic model's plugin has imported it already.

Strings are converted where a number is expected, with the forms pydantic's lax mode accepted
(``" 7 "``, ``"1_000"``), and, in values that came as text (``MEMWELL_*`` variables), where a
boolean is expected (``"yes"``/``"off"``...); a config file's booleans must be real booleans
(``enabled = "no"`` is refused, in every section and plugin section). A string stays a string
where the field is one (a numeric-looking model name or key). Non-finite floats are refused.
"""

from __future__ import annotations

import dataclasses
import re
import sys
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, NoReturn, TypeVar

import msgspec

from memwell.contract.errors import ConfigError
from memwell.contract.records import check_finite
from memwell.util.lazy_import import lazy_pattern

if TYPE_CHECKING:
    from msgspec import inspect as msgspec_inspect

_T = TypeVar("_T")

_TRUE = frozenset({"1", "on", "t", "true", "y", "yes"})
_FALSE = frozenset({"0", "off", "f", "false", "n", "no"})
_AT = lazy_pattern(r"^(?P<message>.*?)(?: - at `\$(?P<path>[^`]*)`)?$", re.DOTALL)
_UNKNOWN = lazy_pattern(r"^Object contains unknown field `(?P<name>[^`]*)`$")
_FIELD = lazy_pattern(r"^`(?P<name>[^`]+)`: (?P<reason>.*)$", re.DOTALL)
_SEGMENT = lazy_pattern(r"\.([^.\[]+)|\[(\d+|\.\.\.)\]")


def field_error(name: str, reason: str) -> ValueError:
    """The error a settings class's ``__post_init__`` raises for one bad field.

    A config error then names ``<section>.<name>``, as for a value msgspec refused itself.
    """
    return ValueError(f"`{name}`: {reason}")


def validate_config(
    model: type[_T], data: Any, source: str, prefix: str = "", *, from_text: bool = True
) -> _T:
    """``data`` validated by ``model`` (a msgspec struct, a dataclass or a pydantic model).

    :param source: the file, environment variable or ``"explicit settings"`` the data came from.
    :param prefix: the dotted key of ``data`` in the whole configuration (``"backends.x."``).
    :param from_text: the values came as text (an environment variable), so a string may
        stand for a boolean; ``False`` for a config file, whose booleans must be booleans.
    :raises ConfigError: naming the key and ``source`` of the first problem.
    """
    pydantic = sys.modules.get("pydantic")
    if pydantic is not None and issubclass(model, pydantic.BaseModel):
        if not from_text:
            _check_pydantic_booleans(model, data, source, prefix)
        try:
            validated: _T = model.model_validate(data)  # type: ignore[attr-defined]
        except pydantic.ValidationError as exc:
            _raise_pydantic(exc, source, prefix)
        return validated
    try:
        if not from_text:
            from msgspec import inspect

            _check_booleans(data, inspect.type_info(model), "$")
        return convert(model, data)
    except msgspec.ValidationError as exc:
        raise _config_error(str(exc), model, data, source, prefix) from None


def _check_booleans(value: Any, info: msgspec_inspect.Type, where: str) -> None:
    """Refuse a string where only a boolean fits (msgspec's lax mode would take ``"false"``)."""
    from msgspec import inspect

    if isinstance(info, (inspect.StructType, inspect.DataclassType)) and isinstance(value, dict):
        types = {field.encode_name: field.type for field in info.fields}
        for key, item in value.items():
            if key in types:
                _check_booleans(item, types[key], f"{where}.{key}")
    elif isinstance(info, inspect.DictType) and isinstance(value, dict):
        for item in value.values():
            _check_booleans(item, info.value_type, f"{where}[...]")
    elif isinstance(info, (inspect.ListType, inspect.VarTupleType)) and isinstance(value, list):
        for number, item in enumerate(value):
            _check_booleans(item, info.item_type, f"{where}[{number}]")
    elif isinstance(info, inspect.UnionType) and isinstance(value, (dict, list)):
        for member in info.types:
            _check_booleans(value, member, where)
    elif isinstance(value, str) and _only_boolean(info):
        raise msgspec.ValidationError(f"Expected `bool`, got `str` - at `{where}`")


def _only_boolean(info: msgspec_inspect.Type) -> bool:
    from msgspec import inspect

    kinds = info.types if isinstance(info, inspect.UnionType) else (info,)
    return any(isinstance(kind, inspect.BoolType) for kind in kinds) and not any(
        isinstance(kind, (inspect.StrType, inspect.LiteralType)) for kind in kinds
    )


def _check_pydantic_booleans(model: Any, data: Any, source: str, prefix: str) -> None:
    """A pydantic model's boolean fields given a string in a config file: refused."""
    import typing

    if not isinstance(data, dict):
        return
    for name, field in model.model_fields.items():
        key = field.alias or name
        if key not in data:
            continue
        value, annotation = data[key], field.annotation
        kinds = typing.get_args(annotation) or (annotation,)
        nested = [
            kind for kind in kinds if isinstance(kind, type) and hasattr(kind, "model_fields")
        ]
        if isinstance(value, str) and bool in kinds and str not in kinds:
            dotted = f"{prefix}{key}"
            raise ConfigError(
                f"invalid value for config key {dotted!r} in {source}: "
                f"Expected true or false, got {value!r}",
                key=dotted,
                source=source,
            )
        for kind in nested:
            _check_pydantic_booleans(kind, value, source, f"{prefix}{key}.")


def convert(model: type[_T], data: Any) -> _T:
    """``data`` as a ``model`` (msgspec struct or dataclass), strings converted as pydantic did.

    :raises msgspec.ValidationError: naming the path of the first bad value.
    """
    try:
        value = msgspec.convert(data, model, strict=False)
    except msgspec.ValidationError:
        from msgspec import inspect

        lax = _from_strings(data, inspect.type_info(model))
        if lax == data:
            raise
        value = msgspec.convert(lax, model, strict=False)
    if dataclasses.is_dataclass(model):
        from msgspec import inspect

        _check_known_fields(data, inspect.type_info(model), "$")
    check_finite(msgspec.to_builtins(value), "$")
    return value


def _from_strings(value: Any, info: msgspec_inspect.Type) -> Any:
    from msgspec import inspect

    if isinstance(info, (inspect.StructType, inspect.DataclassType)) and isinstance(value, dict):
        types = {field.encode_name: field.type for field in info.fields}
        return {
            key: _from_strings(item, types[key]) if key in types else item
            for key, item in value.items()
        }
    if isinstance(info, inspect.DictType) and isinstance(value, dict):
        return {key: _from_strings(item, info.value_type) for key, item in value.items()}
    if isinstance(info, (inspect.ListType, inspect.VarTupleType)) and isinstance(value, list):
        return [_from_strings(item, info.item_type) for item in value]
    if isinstance(info, inspect.UnionType) and not isinstance(value, str):
        # e.g. ``Sub | None`` given a table: convert inside the member that takes a table.
        containers: tuple[type[inspect.Type], ...] = (
            (inspect.ListType, inspect.VarTupleType)
            if isinstance(value, list)
            else (inspect.StructType, inspect.DataclassType, inspect.DictType)
        )
        member = next((t for t in info.types if isinstance(t, containers)), None)
        return value if member is None else _from_strings(value, member)
    if isinstance(value, str):
        return _scalar_from_string(value, info)
    return value


def _scalar_from_string(text: str, info: msgspec_inspect.Type) -> Any:
    from msgspec import inspect

    kinds = info.types if isinstance(info, inspect.UnionType) else (info,)
    if any(isinstance(kind, (inspect.StrType, inspect.LiteralType)) for kind in kinds):
        return text
    for kind in kinds:
        if isinstance(kind, inspect.BoolType):
            word = text.strip().lower()
            if word in _TRUE or word in _FALSE:
                return word in _TRUE
        elif isinstance(kind, inspect.IntType):
            try:
                return int(text)
            except ValueError:
                number = _float(text)
                if number is not None and number.is_integer():
                    return int(number)
        elif isinstance(kind, inspect.FloatType):
            number = _float(text)
            if number is not None:
                return number
    return text


def _float(text: str) -> float | None:
    try:
        return float(text)
    except ValueError:
        return None


def _check_known_fields(value: Any, info: msgspec_inspect.Type, where: str) -> None:
    """msgspec ignores unknown keys of a dataclass; refuse them as a struct's are refused."""
    from msgspec import inspect

    if isinstance(info, inspect.DataclassType) and isinstance(value, dict):
        types = {field.encode_name: field.type for field in info.fields}
        for key, item in value.items():
            if key not in types:
                at = "" if where == "$" else f" - at `{where}`"
                raise msgspec.ValidationError(f"Object contains unknown field `{key}`{at}")
            _check_known_fields(item, types[key], f"{where}.{key}")


def _config_error(error: str, model: type[Any], data: Any, source: str, prefix: str) -> ConfigError:
    match = _AT.match(error)
    assert match is not None  # the pattern matches any text
    message, path = match["message"], match["path"] or ""
    parts = _path_parts(path, model, data)
    unknown = _UNKNOWN.match(message)
    if unknown:
        key = _join(prefix, [*parts, unknown["name"]])
        return ConfigError(f"unknown config key {key!r} in {source}", key=key, source=source)
    named = _FIELD.match(message)
    if named:
        parts, message = [*parts, named["name"]], named["reason"]
    else:
        message = _readable(message, _value_at(data, parts), _choices(model, parts))
    key = _join(prefix, parts)
    if not key:
        return ConfigError(f"invalid configuration in {source}: {message}", source=source)
    return ConfigError(
        f"invalid value for config key {key!r} in {source}: {message}", key=key, source=source
    )


def _join(prefix: str, parts: list[str]) -> str:
    return (prefix + ".".join(parts)).strip(".")


def _path_parts(path: str, model: type[Any], data: Any) -> list[str]:
    """``.a.b[0][...]`` as ``["a", "b", "0", <the key of the bad mapping entry>]``."""
    parts: list[str] = []
    for name, index in _SEGMENT.findall(path):
        if index == "...":
            parts.append(_bad_entry(model, data, parts, f"- at `${path}`") or "...")
        else:
            parts.append(name or index)
    return parts


def _bad_entry(model: type[Any], data: Any, parts: list[str], where: str) -> str | None:
    """msgspec says only ``[...]`` for a mapping's value: find the key by trying each alone."""
    entries = _value_at(data, parts)
    if not isinstance(entries, dict):
        return None
    for key in entries:
        trial = _replace_at(data, parts, {key: entries[key]})
        try:
            convert(model, trial)
        except msgspec.ValidationError as exc:
            if str(exc).endswith(where):
                return str(key)
    return None


def _replace_at(data: Any, parts: list[str], new: Any) -> Any:
    if not parts:
        return new
    head, rest = parts[0], parts[1:]
    if isinstance(data, dict):
        return {**data, head: _replace_at(data[head], rest, new)}
    items = list(data)
    items[int(head)] = _replace_at(items[int(head)], rest, new)
    return items


_MISSING = object()


def _value_at(data: Any, parts: list[str]) -> Any:
    for part in parts:
        if isinstance(data, Mapping) and part in data:
            data = data[part]
        elif isinstance(data, list) and part.isdigit() and int(part) < len(data):
            data = data[int(part)]
        else:
            return _MISSING
    return data


_TYPE_WORDS = {
    "int": "an integer",
    "float": "a number",
    "bool": "true or false",
    "str": "a string",
    "object": "a table",
    "array": "a list",
    "null": "nothing",
}
_TYPE = lazy_pattern(r"`([a-z |]+)`")


def _readable(message: str, value: Any, choices: tuple[Any, ...] | None) -> str:
    """msgspec's message in the words of a config file, with the value that was given."""
    if message.startswith("Invalid enum value") and choices:
        message = "Expected one of " + ", ".join(repr(choice) for choice in choices)
    message = message.split(", got `", 1)[0]
    message = _TYPE.sub(
        lambda m: " or ".join(_TYPE_WORDS.get(t.strip(), t.strip()) for t in m[1].split("|")),
        message,
    )
    if value is _MISSING or "got" in message:
        return message
    shown = repr(value) if len(repr(value)) <= 60 else repr(value)[:57] + "..."
    return f"{message}, got {shown}"


def _choices(model: type[Any], parts: list[str]) -> tuple[Any, ...] | None:
    """The values a ``Literal`` field at ``parts`` allows (``None`` if it is no such field)."""
    from msgspec import inspect

    info: Any = inspect.type_info(model)
    for part in parts:
        if isinstance(info, (inspect.StructType, inspect.DataclassType)):
            info = next((f.type for f in info.fields if f.encode_name == part), None)
        elif isinstance(info, (inspect.ListType, inspect.VarTupleType)):
            info = info.item_type
        elif isinstance(info, inspect.DictType):
            info = info.value_type
        else:
            return None
    return info.values if isinstance(info, inspect.LiteralType) else None


def _raise_pydantic(exc: Any, source: str, prefix: str) -> NoReturn:
    errors = exc.errors()
    err = errors[0]
    key = prefix + ".".join(str(part) for part in err["loc"])
    if err["type"] == "extra_forbidden":
        message = f"unknown config key {key!r} in {source}"
    else:
        message = f"invalid value for config key {key!r} in {source}: {err['msg']}"
    more = len(errors) - 1
    if more:
        message += f" (and {more} more error{'s' if more > 1 else ''})"
    raise ConfigError(message, key=key, source=source) from None
