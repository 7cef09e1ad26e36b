"""The ``[backends.lancedb]`` section: defaults, validation and how URIs reach LanceDB."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest
from memwell.contract.config import load_settings
from memwell.contract.errors import ConfigError
from memwell.registry.plugins import PluginRegistry
from memwell_lancedb.config import LanceConfig, connect_kwargs, is_local_uri, resolve_uri
from msgspec import ValidationError


def test_defaults_follow_the_reference() -> None:
    config = LanceConfig()
    assert (config.auto_capture, config.auto_recall, config.capture_max_chars) == (
        False,
        True,
        500,
    )
    assert (config.journal, config.journal_path) == (True, "memory/captured.md")
    for bad in ({"capture_max_chars": 99}, {"capture_max_chars": 10_001}, {"nope": 1}):
        with pytest.raises(ValidationError):
            LanceConfig.model_validate(bad)


def test_unknown_key_in_memwell_toml_names_it(
    registry: PluginRegistry, workspace: Path, tmp_path: Path
) -> None:
    (workspace / "memwell.toml").write_text("[backends.lancedb]\nautocapture = true\n")
    with pytest.raises(ConfigError, match=r"backends\.lancedb\.autocapture"):
        load_settings(workspace, environ={}, user_config=tmp_path / "none.toml", registry=registry)


def test_uri_resolution(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    assert resolve_uri(LanceConfig(), ws, ".memwell") == str(ws / ".memwell" / "lancedb")
    assert resolve_uri(LanceConfig(uri="db"), ws, ".memwell") == str(ws / "db")
    assert resolve_uri(LanceConfig(uri="file:///srv/db"), ws, ".memwell") == "/srv/db"
    for remote in ("s3://bucket/memwell", "gs://b/m", "az://c/m", "db://team-memory"):
        assert resolve_uri(LanceConfig(uri=remote), ws, ".memwell") == remote
        assert not is_local_uri(remote)


def test_connect_arguments() -> None:
    s3 = LanceConfig(uri="s3://b/m", storage_options={"aws_region": "eu-west-1"})
    assert connect_kwargs(s3, "s3://b/m") == {
        "storage_options": {"aws_region": "eu-west-1"},
        "read_consistency_interval": timedelta(0),
    }
    cloud = LanceConfig(
        storage_options={"api_key": "sk", "region": "us-east-1", "timeout": "30s"},
        read_consistency_seconds=None,
    )
    assert connect_kwargs(cloud, "db://team") == {
        "api_key": "sk",
        "region": "us-east-1",
        "storage_options": {"timeout": "30s"},
    }
    assert connect_kwargs(LanceConfig(read_consistency_seconds=5), "/x") == {
        "read_consistency_interval": timedelta(seconds=5)
    }
