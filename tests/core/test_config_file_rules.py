"""Config files: booleans are booleans, and a workspace's file keeps index_dir inside it.

Issue 38.7: ``[write] enabled = "no"`` was taken as false, and ``index_dir = "../x"`` in a
workspace's ``memwell.toml`` (a file that comes with a cloned repository) sent the index,
and the write lock, outside the workspace. The user's own config, environment variables and
flags may still do both.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import msgspec
import pytest
from config_helpers import tiny_backend_registry
from memwell.contract.config import load_settings
from memwell.contract.errors import ConfigError
from memwell.contract.records import Record

NO_USER = Path("/nonexistent/memwell-user.toml")


def workspace_with(tmp_path: Path, toml: str) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "memwell.toml").write_text(toml)
    return ws


@pytest.mark.parametrize(
    ("toml", "key"),
    [
        ('[write]\nenabled = "no"\n', "write.enabled"),
        ('[write]\nenabled = "false"\n', "write.enabled"),
        ('[sync]\nwatch = "off"\n', "sync.watch"),
        ('[recall_tracking]\nenabled = "0"\n', "recall_tracking.enabled"),
    ],
)
def test_a_string_for_a_boolean_in_a_file_is_refused(tmp_path: Path, toml: str, key: str) -> None:
    ws = workspace_with(tmp_path, toml)
    with pytest.raises(ConfigError, match="true or false") as refused:
        load_settings(ws, user_config=NO_USER, environ={})
    assert refused.value.key == key
    assert refused.value.source == str(ws / "memwell.toml")


def test_env_words_for_booleans_still_work(tmp_path: Path) -> None:
    ws = workspace_with(tmp_path, "[write]\nenabled = true\n")
    settings = load_settings(ws, user_config=NO_USER, environ={"MEMWELL_WRITE__ENABLED": "no"})
    assert settings.write.enabled is False


@dataclasses.dataclass
class DataclassConfig:
    verbose: bool = False
    label: str | bool = "x"


class StructConfig(Record, forbid_unknown_fields=True):
    verbose: bool = False
    tags: dict[str, bool] = msgspec.field(default_factory=dict)


@pytest.mark.parametrize("model", [DataclassConfig, StructConfig])
def test_plugin_sections_refuse_strings_for_booleans(tmp_path: Path, model: Any) -> None:
    ws = workspace_with(tmp_path, '[backends.tiny]\nverbose = "yes"\n')
    with pytest.raises(ConfigError, match="true or false") as refused:
        load_settings(ws, user_config=NO_USER, environ={}, registry=tiny_backend_registry(model))
    assert refused.value.key == "backends.tiny.verbose"


def test_a_string_stays_allowed_where_the_field_takes_one(tmp_path: Path) -> None:
    ws = workspace_with(tmp_path, '[backends.tiny]\nlabel = "no"\n')
    load_settings(
        ws, user_config=NO_USER, environ={}, registry=tiny_backend_registry(DataclassConfig)
    )


def test_pydantic_plugin_sections_refuse_strings_for_booleans(tmp_path: Path) -> None:
    pydantic = pytest.importorskip("pydantic")

    class Inner(pydantic.BaseModel):
        deep: bool = False

    class PydanticConfig(pydantic.BaseModel):
        verbose: bool | None = None
        inner: Inner = Inner()

    ws = workspace_with(tmp_path, '[backends.tiny.inner]\ndeep = "off"\n')
    with pytest.raises(ConfigError, match="true or false") as refused:
        load_settings(
            ws, user_config=NO_USER, environ={}, registry=tiny_backend_registry(PydanticConfig)
        )
    assert refused.value.key == "backends.tiny.inner.deep"


@pytest.mark.parametrize("value", ["../x", "/tmp/elsewhere", "a/../../x", "link"])
def test_a_workspace_file_may_not_put_index_dir_outside(tmp_path: Path, value: str) -> None:
    ws = workspace_with(tmp_path, f'index_dir = "{value}"\n')
    (ws / "link").symlink_to(tmp_path)
    with pytest.raises(ConfigError, match="outside the workspace") as refused:
        load_settings(ws, user_config=NO_USER, environ={})
    assert refused.value.key == "index_dir"
    assert refused.value.source == str(ws / "memwell.toml")


def test_the_user_env_and_flags_may_put_index_dir_anywhere(tmp_path: Path) -> None:
    ws = workspace_with(tmp_path, 'index_dir = ".memwell/inner"\n')
    user = tmp_path / "user.toml"
    user.write_text('index_dir = "../shared-index"\n')
    assert load_settings(ws, user_config=user, environ={}).index_dir == ".memwell/inner"
    (ws / "memwell.toml").unlink()
    assert load_settings(ws, user_config=user, environ={}).index_dir == "../shared-index"
    env = {"MEMWELL_INDEX_DIR": "/tmp/idx"}
    assert load_settings(ws, user_config=NO_USER, environ=env).index_dir == "/tmp/idx"
    flags = {"index_dir": "../flag-index"}
    assert load_settings(ws, user_config=NO_USER, environ={}, overrides=flags).index_dir == (
        "../flag-index"
    )
