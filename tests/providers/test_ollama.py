"""The ``ollama`` provider: the official client against the fake server's Ollama routes."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest
import remote_harness as h
from fake_embedding_server import FakeEmbeddingServer, Reply, fake_vector
from memwell.contract.errors import ProviderError, ProviderUnavailableError
from memwell.providers.runtime import EmbeddingRuntime
from memwell_ollama.config import DEFAULT_HOST, normalize_host

server = pytest.fixture(h.serve)
_clean_env = pytest.fixture(autouse=True)(h.clean_env)


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_batch_goes_to_api_embed_with_the_default_model(
    server: FakeEmbeddingServer, tmp_path: Path
) -> None:
    runtime, _ = h.runtime_for(server, "ollama", tmp_path)
    matrix = runtime.embed_documents(["alpha", "beta"])
    assert (matrix == h.expected_matrix(["alpha", "beta"])).all()
    (call,) = server.calls("/api/embed")
    assert call.json["model"] == "nomic-embed-text" and call.json["input"] == ["alpha", "beta"]
    assert call.headers["authorization"] == "Bearer test-key"
    assert server.calls("/api/tags"), "the server was probed before use"
    assert runtime.provider is not None and runtime.provider.model == "nomic-embed-text"


def test_an_old_server_without_api_embed_gets_one_request_per_text(
    server: FakeEmbeddingServer, tmp_path: Path
) -> None:
    provider = h.create_provider(
        "ollama", tmp_path, providers={"ollama": h.section(server, "ollama")}
    )
    server.push(Reply(status=404, body=b"404 page not found", content_type="text/plain"))
    vectors = provider.embed_batch(["one", "two", "three"])
    assert [list(v) for v in vectors] == [fake_vector(t) for t in ("one", "two", "three")]
    legacy = server.calls("/api/embeddings")
    assert sorted(c.json["prompt"] for c in legacy) == ["one", "three", "two"]
    assert all(c.json["model"] == "nomic-embed-text" for c in legacy)
    provider.embed_query("four")  # remembered: no second try of /api/embed
    assert len(server.calls("/api/embed")) == 1


def test_a_missing_model_is_an_error_not_a_legacy_server(
    server: FakeEmbeddingServer, tmp_path: Path
) -> None:
    provider = h.create_provider(
        "ollama", tmp_path, providers={"ollama": h.section(server, "ollama")}
    )
    server.push(Reply.error(404, 'model "nomic-embed-text" not found, try pulling it first'))
    with pytest.raises(ProviderError, match="not found") as info:
        provider.embed_batch(["x"])
    assert not info.value.retryable and not server.calls("/api/embeddings")


def test_server_errors_are_retryable(server: FakeEmbeddingServer, tmp_path: Path) -> None:
    runtime, delays = h.runtime_for(server, "ollama", tmp_path)
    runtime.selection()
    server.push(Reply.error(503, "loading model"), Reply.error(500, "busy"))
    assert runtime.embed_query("hello").shape == (8,)
    assert len(delays) == 2


def test_base_url_comes_from_ollama_host(
    server: FakeEmbeddingServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OLLAMA_HOST", server.url.removeprefix("http://"))
    settings = h.make_settings(provider="ollama")
    runtime = EmbeddingRuntime(settings, h.make_registry("ollama"), tmp_path)
    runtime.embed_query("hello")
    assert server.calls("/api/embed")


def test_host_normalisation() -> None:
    assert normalize_host("0.0.0.0") == DEFAULT_HOST
    assert normalize_host("example.org:8080/") == "http://example.org:8080"
    assert normalize_host("https://gpu.example.org") == "https://gpu.example.org:443"
    assert normalize_host("http://[::1]:9999/ollama") == "http://[::1]:9999/ollama"


def test_auto_selects_a_reachable_server_only(
    server: FakeEmbeddingServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OLLAMA_HOST", f"127.0.0.1:{_closed_port()}")
    settings = h.make_settings(provider="auto")
    down = EmbeddingRuntime(settings, h.make_registry("ollama"), tmp_path).selection()
    assert down.provider is None
    assert down.unavailable_reason is not None and "not reachable" in down.unavailable_reason

    monkeypatch.setenv("OLLAMA_HOST", server.url)
    up = EmbeddingRuntime(settings, h.make_registry("ollama"), tmp_path).selection()
    assert up.provider is not None and up.provider.id == "ollama"


def test_an_explicit_unreachable_server_fails_with_a_clear_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OLLAMA_HOST", f"127.0.0.1:{_closed_port()}")
    runtime = EmbeddingRuntime(
        h.make_settings(provider="ollama"), h.make_registry("ollama"), tmp_path
    )
    with pytest.raises(ProviderUnavailableError, match="ollama serve"):
        runtime.selection()


def test_cache_key_names_server_and_model_but_no_key(
    server: FakeEmbeddingServer, tmp_path: Path
) -> None:
    provider = h.create_provider(
        "ollama",
        tmp_path,
        model="mxbai-embed-large",
        providers={"ollama": h.section(server, "ollama")},
    )
    data = provider.cache_key_data()
    assert data["base_url"] == server.url and data["model"] == "mxbai-embed-large"
    assert "test-key" not in str(data)
