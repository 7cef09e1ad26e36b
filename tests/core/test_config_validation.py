"""memwell.contract.config_validation: string conversion as pydantic did it, plugin config models of
every supported kind (msgspec, dataclass, pydantic), and errors that name key and source."""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
from pathlib import Path
from typing import Annotated, Any

import msgspec
import pytest
from config_helpers import tiny_backend_registry
from hypothesis import given, settings
from hypothesis import strategies as st
from memwell.contract.config import MemwellSettings, load_settings, plugin_config
from memwell.contract.config_validation import convert, field_error
from memwell.contract.errors import ConfigError
from memwell.contract.records import Record
from memwell.registry.plugins import PluginRegistry

NO_USER = Path("/nonexistent/memwell-user.toml")


class StructConfig(Record, forbid_unknown_fields=True):
    depth: Annotated[int, msgspec.Meta(ge=1)] = 3
    ratio: float = 0.5
    strict: bool = False
    label: str = "x"

    def __post_init__(self) -> None:
        if self.label == "forbidden":
            raise field_error("label", "must not be 'forbidden'")


@dataclasses.dataclass
class DataclassConfig:
    depth: int = 3
    strict: bool = False


def _env(**values: str) -> MemwellSettings:
    return load_settings(None, environ=values, user_config=NO_USER)


def _env_error(registry: PluginRegistry | None = None, **values: str) -> ConfigError:
    with pytest.raises(ConfigError) as info:
        load_settings(None, environ=values, user_config=NO_USER, registry=registry)
    return info.value


# ---------------------------------------------------------------- environment strings


@settings(max_examples=60, deadline=None)
@given(
    number=st.integers(1, 1000),
    pad=st.sampled_from(["", " ", "  "]),
    sign=st.sampled_from(["", "+"]),
)
def test_int_setting_from_env(number: int, pad: str, sign: str) -> None:
    text = f"{pad}{sign}{number}{pad}"
    assert _env(MEMWELL_QUERY__MAX_RESULTS=text).query.max_results == number


@settings(max_examples=60, deadline=None)
@given(value=st.floats(0.0, 1.0))
def test_float_setting_from_env(value: float) -> None:
    assert _env(MEMWELL_QUERY__MIN_SCORE=repr(value)).query.min_score == value


_TRUE = ["true", "1", "yes", "on", "t", "y"]
_FALSE = ["false", "0", "no", "off", "f", "n"]


@settings(max_examples=60, deadline=None)
@given(word=st.sampled_from(_TRUE + _FALSE), upper=st.booleans())
def test_bool_setting_from_env_takes_the_words_pydantic_took(word: str, upper: bool) -> None:
    text = word.upper() if upper else word
    assert _env(MEMWELL_SYNC__WATCH=text).sync.watch is (word in _TRUE)


def _not_json_table(text: str) -> bool:
    try:
        return not isinstance(json.loads(text), (list, dict))
    except ValueError:
        return True


_numeric = st.one_of(
    st.integers().map(str),
    st.floats(allow_nan=False).map(repr),
    st.sampled_from(["007", "1e5", "true", "null", "nan", " 12 "]),
)


@settings(max_examples=80, deadline=None)
@given(text=st.one_of(_numeric, st.text(max_size=12).filter(_not_json_table)))
def test_string_settings_stay_strings(text: str) -> None:
    loaded = _env(
        MEMWELL_MODEL=text, MEMWELL_REMOTE__API_KEY=text, MEMWELL_REMOTE__HEADERS__X_ID=text
    )
    assert loaded.model == text
    assert loaded.remote.api_key == text
    assert loaded.remote.headers == {"x_id": text}


def test_bad_env_value_names_variable_key_and_value() -> None:
    err = _env_error(MEMWELL_SYNC__WATCH="maybe")
    assert err.key == "sync.watch"
    assert err.source == "environment variable MEMWELL_SYNC__WATCH"
    assert str(err) == (
        "invalid value for config key 'sync.watch' in environment variable "
        "MEMWELL_SYNC__WATCH: Expected true or false, got 'maybe'"
    )


def test_literal_error_lists_the_choices(tmp_path: Path) -> None:
    path = tmp_path / "memwell.toml"
    path.write_text('[store.fts]\ntokenizer = "porter"\n', encoding="utf-8")
    with pytest.raises(ConfigError) as info:
        load_settings(tmp_path, environ={}, user_config=NO_USER)
    assert info.value.key == "store.fts.tokenizer" and info.value.source == str(path)
    assert "'trigram', 'unicode61', got 'porter'" in str(info.value)


def test_bad_mapping_entry_is_named_by_its_key() -> None:
    with pytest.raises(ConfigError) as info:
        load_settings(
            None,
            environ={},
            user_config=NO_USER,
            overrides={"remote": {"headers": {"a": "x", "b": 3, "c": "y"}}},
        )
    assert info.value.key == "remote.headers.b"


class OptionalTables(Record, forbid_unknown_fields=True):
    one: StructConfig | None = None
    many: list[StructConfig] | None = None


def test_strings_convert_inside_optional_tables_and_lists() -> None:
    data = {"one": {"depth": " 4 ", "strict": "on"}, "many": [{"ratio": "0.25", "strict": "no"}]}
    config = convert(OptionalTables, data)
    assert config.one == StructConfig(depth=4, strict=True)
    assert config.many == [StructConfig(ratio=0.25, strict=False)]


# ---------------------------------------------------------------- non-finite floats


@pytest.mark.parametrize(
    ("toml", "key"),
    [
        ("fallback_retry_minutes = inf\n", "fallback_retry_minutes"),
        ("[query]\nmin_score = nan\n", "query.min_score"),
        ("[remote]\ntimeout_seconds = inf\n", "remote.timeout_seconds"),
        ("[backends.tiny]\nratio = nan\n", "backends.tiny.ratio"),
    ],
)
def test_non_finite_floats_are_refused_naming_the_key(tmp_path: Path, toml: str, key: str) -> None:
    path = tmp_path / "memwell.toml"
    path.write_text(toml, encoding="utf-8")
    registry = tiny_backend_registry(StructConfig)
    with pytest.raises(ConfigError) as info:
        load_settings(tmp_path, environ={}, user_config=NO_USER, registry=registry)
    assert info.value.key == key and info.value.source == str(path)
    assert f"'{key}'" in str(info.value)


def test_non_finite_env_float_is_refused() -> None:
    err = _env_error(MEMWELL_FALLBACK_RETRY_MINUTES="inf")
    assert err.key == "fallback_retry_minutes" and "finite" in str(err)


# ---------------------------------------------------------------- plugin config models


@pytest.mark.parametrize("model", [StructConfig, DataclassConfig])
def test_msgspec_and_dataclass_plugin_configs_validate(model: type[Any]) -> None:
    registry = tiny_backend_registry(model)
    section = {"depth": "7", "strict": "yes"}
    loaded = load_settings(
        None,
        environ={"MEMWELL_BACKENDS__TINY__DEPTH": "7", "MEMWELL_BACKENDS__TINY__STRICT": "yes"},
        user_config=NO_USER,
        registry=registry,
    )
    config = plugin_config(model, loaded.backends["tiny"], "backends.tiny")
    assert isinstance(config, model)
    assert (config.depth, config.strict) == (7, True)
    assert plugin_config(model, section, "backends.tiny") == config
    err = _env_error(registry, MEMWELL_BACKENDS__TINY__DEPTH="0" if model is StructConfig else "x")
    assert err.key == "backends.tiny.depth"
    assert err.source == "environment variable MEMWELL_BACKENDS__TINY__DEPTH"
    err = _env_error(registry, MEMWELL_BACKENDS__TINY__COLOUR="red")
    assert str(err) == (
        "unknown config key 'backends.tiny.colour' in environment variable "
        "MEMWELL_BACKENDS__TINY__COLOUR"
    )


def test_post_init_field_error_names_the_field() -> None:
    with pytest.raises(ConfigError) as info:
        plugin_config(StructConfig, {"label": "forbidden"}, "backends.tiny")
    assert info.value.key == "backends.tiny.label"
    assert info.value.source == "the merged configuration"
    assert str(info.value).endswith(": must not be 'forbidden'")


def test_third_party_pydantic_config_still_validates() -> None:
    pydantic = pytest.importorskip("pydantic")

    class PydanticConfig(pydantic.BaseModel):  # type: ignore[name-defined,misc]
        model_config = pydantic.ConfigDict(extra="forbid")
        depth: int = pydantic.Field(3, ge=1)
        strict: bool = False

    registry = tiny_backend_registry(PydanticConfig)
    loaded = load_settings(
        None,
        environ={"MEMWELL_BACKENDS__TINY__STRICT": "on"},
        user_config=NO_USER,
        registry=registry,
    )
    config = plugin_config(PydanticConfig, loaded.backends["tiny"], "backends.tiny")
    assert isinstance(config, PydanticConfig) and config.strict is True
    err = _env_error(registry, MEMWELL_BACKENDS__TINY__DEPTH="0")
    assert err.key == "backends.tiny.depth"
    assert err.source == "environment variable MEMWELL_BACKENDS__TINY__DEPTH"
    assert "greater than or equal to 1" in str(err)
    with pytest.raises(ConfigError) as info:
        plugin_config(PydanticConfig, {"depht": 2, "depth": 0}, "backends.tiny")
    assert info.value.key in ("backends.tiny.depth", "backends.tiny.depht")
    assert "(and 1 more error)" in str(info.value)


def test_settings_accept_tables_as_mappings() -> None:
    settings_ = MemwellSettings(textgen={"provider": "shout"}, query={"max_results": 3})  # type: ignore[arg-type]
    assert settings_.textgen.provider == "shout" and settings_.query.max_results == 3
    with pytest.raises(ValueError, match="max_results"):
        MemwellSettings(query={"max_results": 0})  # type: ignore[arg-type]


def test_fingerprint_is_stable_for_equal_settings() -> None:
    a = load_settings(None, environ={"MEMWELL_REMOTE__TIMEOUT_SECONDS": "120"}, user_config=NO_USER)
    b = load_settings(None, environ={}, user_config=NO_USER)
    assert a == b and a.fingerprint() == b.fingerprint()


@pytest.mark.parametrize(
    "module",
    [
        "memwell.contract.config",
        "memwell_sqlite.config",
        "memwell_local.provider",
        "memwell.providers.remote",
    ],
)
def test_config_modules_import_no_pydantic(module: str) -> None:
    code = f"import sys, {module}; print('pydantic' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
