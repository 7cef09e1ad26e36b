"""The first-party rerankers: Voyage's rerank API on the fake server, and a real CrossEncoder."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import memwell_local.plugin
import memwell_sqlite.plugin
import pytest
import remote_harness as h
from fake_embedding_server import FakeEmbeddingServer, Reply
from memwell.contract.config import MemwellSettings
from memwell.contract.errors import ProviderError, ProviderUnavailableError
from memwell.registry.plugins import PluginRegistry
from memwell.runtime.factory import close_all, open_memory
from memwell.runtime.rerank import open_reranker
from memwell.testing import hash_provider_plugin
from memwell.testing.conformance import write_workspace

DOCS = ["the release ships on friday", "cats sleep all day", "release notes for friday"]


@pytest.fixture
def server() -> Iterator[FakeEmbeddingServer]:
    yield from h.serve()


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    h.clean_env(monkeypatch)


def voyage_settings(server: FakeEmbeddingServer, **values: object) -> MemwellSettings:
    return h.make_settings(
        rerank={"provider": "voyage"}, providers={"voyage": h.section(server, "voyage")}, **values
    )


def test_voyage_reranks_through_the_sdk(server: FakeEmbeddingServer, tmp_path: Path) -> None:
    settings = voyage_settings(server)
    reranker = open_reranker(settings, h.make_registry("voyage"), tmp_path)
    assert (reranker.id, reranker.model) == ("voyage", "rerank-2.5-lite")
    scores = reranker.rerank("when does the release ship", DOCS)
    assert scores == pytest.approx([0.4, 0.0, 0.2])  # input order, not the server's
    (call,) = server.calls("/v1/rerank")
    body = json.loads(call.body)
    assert body["query"] == "when does the release ship" and body["documents"] == DOCS
    assert body["model"] == "rerank-2.5-lite"
    assert call.headers["authorization"] == "Bearer test-key"


def test_voyage_errors_are_provider_errors(server: FakeEmbeddingServer, tmp_path: Path) -> None:
    reranker = open_reranker(voyage_settings(server), h.make_registry("voyage"), tmp_path)
    server.push(Reply.error(429, "slow down"))
    with pytest.raises(ProviderError) as caught:
        reranker.rerank("release", DOCS)
    assert caught.value.retryable and "rerank" in str(caught.value)


def test_voyage_without_a_key_is_unavailable(tmp_path: Path) -> None:
    settings = h.make_settings(rerank={"provider": "voyage"})
    with pytest.raises(ProviderUnavailableError, match="VOYAGE_API_KEY"):
        open_reranker(settings, h.make_registry("voyage"), tmp_path)


def test_search_reranked_by_voyage_end_to_end(server: FakeEmbeddingServer, tmp_path: Path) -> None:
    registry = h.make_registry("voyage")
    registry.register(memwell_sqlite.plugin, "builtin")
    registry.register(hash_provider_plugin(), "hash")
    workspace = write_workspace(tmp_path / "ws")
    settings = voyage_settings(server, provider="hash", sync={"watch": False, "on_search": False})
    try:
        memory = open_memory(workspace, settings=settings, registry=registry)
        memory.sync()
        found = memory.search("which codename for the billing rewrite", min_score=0.3)
        assert [hit.path for hit in found] == ["memory/2026-01-02.md"]
        assert found[0].score == pytest.approx(5 / 6)  # all but "which"
        assert server.calls("/v1/rerank")
    finally:
        close_all()


# -- cross-encoder ---------------------------------------------------------------------------

VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *sorted(set(" ".join(DOCS).split())),
         "when", "does", "ship"]  # fmt: skip


@pytest.fixture(scope="module")
def tiny_cross_encoder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A randomly initialised one-layer BERT cross-encoder saved locally (no weights needed)."""
    pytest.importorskip("sentence_transformers")
    import torch
    from transformers import BertConfig, BertForSequenceClassification, BertTokenizerFast

    directory = tmp_path_factory.mktemp("tiny-cross-encoder")
    (directory / "vocab.txt").write_text("\n".join(VOCAB) + "\n")
    BertTokenizerFast(vocab_file=str(directory / "vocab.txt")).save_pretrained(directory)
    torch.manual_seed(0)
    config = BertConfig(
        vocab_size=len(VOCAB), hidden_size=16, num_hidden_layers=1, num_attention_heads=2,
        intermediate_size=32, max_position_embeddings=64, num_labels=1, initializer_range=0.5,
    )  # fmt: skip
    BertForSequenceClassification(config).save_pretrained(directory)
    return directory


def cross_encoder_settings(model_path: Path) -> MemwellSettings:
    return MemwellSettings.model_validate(
        {
            "rerank": {"provider": "cross-encoder"},
            "providers": {"cross-encoder": {"model_path": str(model_path), "max_length": 64}},
        }
    )


def local_registry() -> PluginRegistry:
    registry = PluginRegistry(load_entry_points=False)
    registry.register(memwell_local.plugin, "local")
    return registry


def test_cross_encoder_scores_are_the_models_sigmoid(
    tiny_cross_encoder: Path, tmp_path: Path
) -> None:
    import numpy as np
    from sentence_transformers import CrossEncoder

    reranker = open_reranker(cross_encoder_settings(tiny_cross_encoder), local_registry(), tmp_path)
    assert reranker.id == "cross-encoder"
    query = "when does the release ship"
    scores = reranker.rerank(query, DOCS)
    logits = CrossEncoder(str(tiny_cross_encoder)).predict([(query, d) for d in DOCS])
    assert scores == pytest.approx(list(1 / (1 + np.exp(-np.asarray(logits)))), abs=1e-5)
    assert all(0.0 < s < 1.0 for s in scores)
    assert len(set(scores)) > 1, "the score depends on the pair"
    assert reranker.rerank(query, []) == []


def test_cross_encoder_without_a_local_model_is_unavailable(tmp_path: Path) -> None:
    pytest.importorskip("sentence_transformers")
    settings = MemwellSettings.model_validate({"rerank": {"provider": "cross-encoder"}})
    with pytest.raises(ProviderUnavailableError, match=r"cross-encoder reranker: .*offline"):
        open_reranker(settings, local_registry(), tmp_path)


def test_late_interaction_ranks_by_maxsim_over_the_bundled_minilm(tmp_path: Path) -> None:
    from memwell_local.late_interaction import maxsim

    settings = MemwellSettings.model_validate({"rerank": {"provider": "late-interaction"}})
    reranker = open_reranker(settings, local_registry(), tmp_path)
    assert reranker.model == "all-MiniLM-L6-v2"
    scores = reranker.rerank("when does the release ship", DOCS)
    assert scores.index(max(scores)) == 0 and scores[1] == min(scores)
    assert all(0.0 <= s <= 1.0 for s in scores)
    encoder = reranker.encoder  # type: ignore[attr-defined]
    query, doc = encoder.token_vectors(["when does the release ship", DOCS[0]])
    assert scores[0] == pytest.approx(maxsim(query, doc), abs=1e-3)  # the cache keeps float16
    cached = reranker.cache.size  # type: ignore[attr-defined]
    assert cached > 0
    again = reranker.rerank("when does the release ship", DOCS)
    assert again == pytest.approx(scores, abs=1e-6)
    assert reranker.cache.size == cached, "the documents' token vectors came from the cache"  # type: ignore[attr-defined]


def test_late_interaction_cache_drops_the_least_recently_used() -> None:
    import numpy as np
    from memwell_local.late_interaction import TokenCache

    cache = TokenCache(budget_bytes=2 * 4 * 384 * 2)  # two 4-token float16 matrices
    rows = {t: np.full((4, 384), i, dtype=np.float16) for i, t in enumerate("abc")}
    cache.put("a", rows["a"])
    cache.put("b", rows["b"])
    assert cache.get("a") is not None  # "b" is now the least recently used
    cache.put("c", rows["c"])
    assert cache.get("b") is None and cache.get("a") is not None and cache.get("c") is not None
    assert cache.size == 2 * rows["a"].nbytes
    cache.put("big", np.zeros((100, 384), dtype=np.float16))
    assert cache.get("big") is None, "a matrix over the whole budget is not cached"


def test_late_interaction_needs_a_bert_the_numpy_encoder_runs(tmp_path: Path) -> None:
    model = tmp_path / "not-bert"
    model.mkdir()
    (model / "config.json").write_text(json.dumps({"model_type": "t5"}), encoding="utf-8")
    (model / "modules.json").write_text("[]", encoding="utf-8")
    settings = MemwellSettings.model_validate(
        {
            "rerank": {"provider": "late-interaction"},
            "providers": {"late-interaction": {"model_path": str(model)}},
        }
    )
    with pytest.raises(ProviderUnavailableError, match=r"late-interaction reranker: .*not a BERT"):
        open_reranker(settings, local_registry(), tmp_path)
