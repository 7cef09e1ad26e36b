"""memwell.contract.records: the model-style helpers of msgspec records."""

from __future__ import annotations

import datetime as dt
import importlib
import inspect
from pathlib import Path
from typing import Annotated, ClassVar

import msgspec
import pytest
from hypothesis import given
from hypothesis import strategies as st
from memwell.contract.records import Record


class Inner(Record, forbid_unknown_fields=True):
    weight: Annotated[float, msgspec.Meta(ge=0.0, le=1.0)] = 0.5
    lambda_: float = msgspec.field(default=0.7, name="lambda")


class Outer(Record, forbid_unknown_fields=True):
    dump_exclude: ClassVar[frozenset[str]] = frozenset({"hidden"})

    name: str
    count: int = 1
    inner: Inner = msgspec.field(default_factory=Inner)
    tags: tuple[str, ...] = ()
    when: dt.datetime | None = None
    where: Path | None = None
    hidden: bool = False


def test_dump_nests_records_and_leaves_out_excluded_fields() -> None:
    record = Outer(name="a", tags=("x", "y"), hidden=True)
    assert record.model_dump() == {
        "name": "a",
        "count": 1,
        "inner": {"weight": 0.5, "lambda_": 0.7},
        "tags": ("x", "y"),
        "when": None,
        "where": None,
    }


def test_json_dump_uses_wire_names_and_json_types() -> None:
    stamp = dt.datetime(2026, 12, 2, 7, 0, tzinfo=dt.timezone.utc)
    record = Outer(name="a", tags=("x",), when=stamp, where=Path("memory/a.md"))
    dumped = record.model_dump(mode="json", by_alias=True)
    assert dumped["inner"] == {"weight": 0.5, "lambda": 0.7}
    assert dumped["tags"] == ["x"]
    assert dumped["when"] == "2026-12-02T07:00:00Z"  # UTC as pydantic wrote it
    assert dumped["where"] == "memory/a.md"


def test_copy_replaces_only_the_updated_fields() -> None:
    record = Outer(name="a", count=3)
    copy = record.model_copy(update={"count": 4})
    assert (copy.name, copy.count, record.count) == ("a", 4, 3)
    assert copy.inner is record.inner


def test_validate_converts_strings_and_names_the_bad_path() -> None:
    record = Outer.model_validate({"name": "a", "count": "7", "inner": {"lambda": "0.25"}})
    assert (record.count, record.inner.lambda_) == (7, 0.25)
    with pytest.raises(msgspec.ValidationError, match=r"\$\.inner\.weight"):
        Outer.model_validate({"name": "a", "inner": {"weight": 2}})
    with pytest.raises(msgspec.ValidationError, match="unknown field `extra`"):
        Outer.model_validate({"name": "a", "extra": 1})
    with pytest.raises(ValueError, match=r"finite.*\$\.inner\.lambda"):
        Outer.model_validate({"name": "a", "inner": {"lambda": float("nan")}})


@given(
    name=st.text(max_size=20),
    count=st.integers(min_value=-(2**40), max_value=2**40),
    weight=st.floats(min_value=0.0, max_value=1.0),
    tags=st.lists(st.text(max_size=5), max_size=4).map(tuple),
)
def test_json_dump_round_trips_through_validate(
    name: str, count: int, weight: float, tags: tuple[str, ...]
) -> None:
    record = Outer(name=name, count=count, inner=Inner(weight=weight), tags=tags)
    assert Outer.model_validate(record.model_dump(mode="json", by_alias=True)) == record


@pytest.mark.parametrize(
    "module",
    [
        "memwell.contract.config",
        "memwell_sqlite.config",
        "memwell_lancedb.config",
        "memwell_postgres.config",
        "memwell_qmd.config",
        "memwell_ollama.config",
    ],
)
def test_settings_records_carry_evaluated_annotations(module: str) -> None:
    """Every command converts the settings: msgspec would compile a string annotation first."""
    mod = importlib.import_module(module)
    records = [
        obj
        for obj in vars(mod).values()
        if inspect.isclass(obj) and issubclass(obj, msgspec.Struct) and obj.__module__ == module
    ]
    assert records
    for record in records:
        strings = {
            k: v for k, v in vars(record).get("__annotations__", {}).items() if isinstance(v, str)
        }
        assert not strings, f"{record.__name__} has string annotations {strings}"
