"""Records: the typed values memwell exchanges (results, statuses, settings).

They are :mod:`msgspec` structs: building one is a plain ``__init__``, validating outside data is
one :func:`msgspec.convert` call, and importing them costs a few milliseconds where pydantic
cost the CLI a fifth of a second. :class:`Record` keeps the calls callers made on the pydantic
models these types used to be (``model_dump``, ``model_copy``, ``model_validate``), with the
same meaning, so code written against them keeps working, and ``model_json_schema`` gives the
JSON Schema pydantic gave for the field types records use.

A subclass lists fields that ``model_dump`` leaves out in :attr:`Record.dump_exclude`; a field
with another name on the wire is declared ``msgspec.field(name="...")`` and dumped under that
name with ``by_alias=True``. msgspec does not inherit ``kw_only``: declare a subclass
``class Hit(Record, kw_only=True)`` to keep construction keyword-only (and a required field
after a defaulted one legal).

A module of records that every command converts (the settings, a plugin's config section)
leaves out ``from __future__ import annotations``: msgspec evaluates a string annotation with
:func:`compile` the first time it converts the type, about 1.4 ms of a one-shot command for
the settings alone.
"""

from __future__ import annotations

import datetime as _dt
import os
from collections.abc import Mapping
from typing import Any, ClassVar, Literal, TypeVar

import msgspec

_R = TypeVar("_R", bound="Record")
DumpMode = Literal["python", "json"]


class Record(msgspec.Struct, kw_only=True):
    """Base of memwell's records: a keyword-only struct with model-style helpers."""

    dump_exclude: ClassVar[frozenset[str]] = frozenset()
    """Fields :meth:`model_dump` leaves out (internal flags that payloads must not carry)."""

    def model_dump(self, *, mode: DumpMode = "python", by_alias: bool = False) -> dict[str, Any]:
        """The record as a dict, nested records included.

        ``mode="json"`` gives only JSON types (dates and paths as strings, tuples as lists);
        ``by_alias`` uses each field's wire name (``msgspec.field(name=...)``).
        """
        out = _dump(self, mode, by_alias)
        assert isinstance(out, dict)
        return out

    def model_copy(self: _R, *, update: Mapping[str, Any] | None = None) -> _R:
        """A shallow copy with ``update``'s fields replaced (not validated, as in pydantic)."""
        return msgspec.structs.replace(self, **dict(update or {}))

    @classmethod
    def model_validate(cls: type[_R], data: Any) -> _R:
        """Validate ``data`` (a mapping, or an object with the fields as attributes).

        Strings are converted where a number or a boolean is expected, as pydantic's lax mode
        did; a non-finite float is refused.

        :raises msgspec.ValidationError: naming the path of the first bad value (a
            :class:`ValueError`).
        """
        if isinstance(data, cls):
            return data
        value = msgspec.convert(data, cls, strict=False, from_attributes=True)
        check_finite(value, "$")
        return value

    @classmethod
    def model_json_schema(cls) -> dict[str, Any]:
        """The JSON Schema of the record's dump, as pydantic wrote it (titles, defaults, the
        class docstring as ``description``), for records of scalar, optional, literal,
        date-time, list and nested record fields.

        :raises TypeError: for a field type outside those.
        """
        import inspect

        import msgspec.inspect as mi

        info = mi.type_info(cls)
        assert isinstance(info, mi.StructType)
        properties: dict[str, Any] = {}
        required: list[str] = []
        for field in info.fields:
            prop = _type_schema(field.type, f"{cls.__name__}.{field.name}")
            if field.default is not msgspec.NODEFAULT:
                prop["default"] = field.default
            prop["title"] = field.name.title().replace("_", " ")
            properties[field.encode_name] = dict(sorted(prop.items()))
            if field.required:
                required.append(field.encode_name)
        schema: dict[str, Any] = {}
        if cls.__doc__:
            schema["description"] = inspect.cleandoc(cls.__doc__)
        schema["properties"] = properties
        if required:
            schema["required"] = required
        schema.update(title=cls.__name__, type="object")
        return schema


def _dump(value: Any, mode: DumpMode, by_alias: bool) -> Any:
    if isinstance(value, Record):
        kind = type(value)
        skip = kind.dump_exclude
        keys = kind.__struct_encode_fields__ if by_alias else kind.__struct_fields__
        return {
            key: _dump(getattr(value, name), mode, by_alias)
            for name, key in zip(kind.__struct_fields__, keys, strict=True)
            if name not in skip
        }
    if isinstance(value, dict):
        return {key: _dump(item, mode, by_alias) for key, item in value.items()}
    if isinstance(value, list):
        return [_dump(item, mode, by_alias) for item in value]
    if isinstance(value, tuple):
        items = [_dump(item, mode, by_alias) for item in value]
        return items if mode == "json" else tuple(items)
    if mode == "json":
        if isinstance(value, (_dt.datetime, _dt.time)):
            text = value.isoformat()
            # UTC as ``Z``, as pydantic wrote it (``+00:00`` is what isoformat gives).
            return text[:-6] + "Z" if value.utcoffset() == _dt.timedelta(0) else text
        if isinstance(value, _dt.date):
            return value.isoformat()
        if isinstance(value, os.PathLike):
            return os.fspath(value)
        if isinstance(value, (set, frozenset)):
            return [_dump(item, mode, by_alias) for item in value]
    return value


_SCALARS = {"StrType": "string", "IntType": "integer", "FloatType": "number", "BoolType": "boolean"}


def _type_schema(kind: Any, where: str) -> dict[str, Any]:
    """A pydantic-style schema of one ``msgspec.inspect`` type."""
    import msgspec.inspect as mi

    name = type(kind).__name__
    if name in _SCALARS:
        return {"type": _SCALARS[name]}
    if isinstance(kind, mi.NoneType):
        return {"type": "null"}
    if isinstance(kind, mi.DateTimeType):
        return {"format": "date-time", "type": "string"}
    if isinstance(kind, mi.LiteralType) and all(isinstance(v, str) for v in kind.values):
        return {"enum": list(kind.values), "type": "string"}
    if isinstance(kind, mi.UnionType):
        return {"anyOf": [_type_schema(member, where) for member in kind.types]}
    if isinstance(kind, mi.ListType):
        return {"items": _type_schema(kind.item_type, where), "type": "array"}
    if isinstance(kind, mi.StructType) and issubclass(kind.cls, Record):
        return kind.cls.model_json_schema()
    raise TypeError(f"{where}: no JSON Schema for {kind!r}")


def check_finite(value: Any, where: str) -> None:
    """Raise :class:`msgspec.ValidationError` naming the path (``where``) of the first
    non-finite float in ``value`` (records, mappings and sequences are walked)."""
    if isinstance(value, float):
        if value != value or value in (float("inf"), float("-inf")):
            raise msgspec.ValidationError(f"Expected a finite number, got {value} - at `{where}`")
    elif isinstance(value, Record):
        kind = type(value)
        for name, key in zip(kind.__struct_fields__, kind.__struct_encode_fields__, strict=True):
            check_finite(getattr(value, name), f"{where}.{key}")
    elif isinstance(value, dict):
        for key, item in value.items():
            check_finite(item, f"{where}.{key}")
    elif isinstance(value, (list, tuple)):
        for index, item in enumerate(value):
            check_finite(item, f"{where}[{index}]")
