"""The four remote providers through their real SDK clients, a fake server and EmbeddingRuntime."""

from __future__ import annotations

import json
from importlib import metadata
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import remote_harness as h
from fake_embedding_server import FakeEmbeddingServer, Reply, fake_vector
from memwell.contract.config import load_settings
from memwell.contract.embeddings import provider_key
from memwell.contract.errors import ConfigError, ProviderError, ProviderUnavailableError
from memwell.providers.remote import RemoteEmbeddingProvider, merge_headers

server = pytest.fixture(h.serve)
_clean_env = pytest.fixture(autouse=True)(h.clean_env)

AUTH = {
    "openai": ("authorization", "Bearer test-key"),
    "gemini": ("x-goog-api-key", "test-key"),
    "mistral": ("authorization", "Bearer test-key"),
    "voyage": ("authorization", "Bearer test-key"),
}
#: The request field that carries output dimensionality, per provider.
DIMENSION_FIELD = {
    "openai": "dimensions",
    "gemini": "outputDimensionality",
    "mistral": "output_dimension",
    "voyage": "output_dimension",
}

providers = pytest.mark.parametrize("pid", h.PROVIDERS)


def embed_calls(server: FakeEmbeddingServer, pid: str) -> list[object]:
    return list(server.calls(h.EMBED_ROUTE[pid]))


def request_model(server: FakeEmbeddingServer, pid: str) -> str:
    call = server.calls(h.EMBED_ROUTE[pid])[-1]
    if pid == "gemini":
        return call.route.split("/models/")[1].split(":")[0]
    return str(call.json["model"])


def gemini_task_types(call: object) -> set[str]:
    return {request["taskType"] for request in call.json["requests"]}  # type: ignore[attr-defined]


# --- success paths ------------------------------------------------------------------------------


@providers
def test_documents_and_query_are_embedded_in_order(
    server: FakeEmbeddingServer, pid: str, tmp_path: Path
) -> None:
    runtime, delays = h.runtime_for(server, pid, tmp_path)
    texts = ["alpha", "beta", "gamma"]

    matrix = runtime.embed_documents(texts)
    query = runtime.embed_query("what is alpha?")

    np.testing.assert_allclose(matrix, h.expected_matrix(texts), rtol=1e-5)
    np.testing.assert_allclose(query, h.unit(fake_vector("what is alpha?")), rtol=1e-5)
    provider = runtime.provider
    assert provider is not None and provider.id == pid
    assert provider.model == h.DEFAULT_MODELS[pid]
    assert provider.dims == 8 and runtime.dims == 8
    assert delays == []
    calls = server.calls(h.EMBED_ROUTE[pid])
    assert len(calls) == 2
    header, value = AUTH[pid]
    assert all(call.headers[header] == value for call in calls)
    assert request_model(server, pid) == h.DEFAULT_MODELS[pid]


def test_gemini_uses_retrieval_task_types(server: FakeEmbeddingServer, tmp_path: Path) -> None:
    runtime, _ = h.runtime_for(server, "gemini", tmp_path)
    runtime.embed_documents(["doc one", "doc two"])
    runtime.embed_query("question")
    documents, query = server.calls(":batchEmbedContents")
    assert gemini_task_types(documents) == {"RETRIEVAL_DOCUMENT"}
    assert gemini_task_types(query) == {"RETRIEVAL_QUERY"}
    assert documents.route == "/v1beta/models/gemini-embedding-001:batchEmbedContents"


def test_voyage_sends_query_and_document_input_types(
    server: FakeEmbeddingServer, tmp_path: Path
) -> None:
    runtime, _ = h.runtime_for(server, "voyage", tmp_path)
    runtime.embed_documents(["doc"])
    runtime.embed_query("question")
    documents, query = server.calls("/v1/embeddings")
    assert documents.json["input_type"] == "document"
    assert query.json["input_type"] == "query"


@pytest.mark.parametrize(
    ("pid", "configured", "sent"),
    [
        ("openai", "openai/text-embedding-3-large", "text-embedding-3-large"),
        ("gemini", "models/gemini-embedding-2-preview", "gemini-embedding-2-preview"),
        ("gemini", "google/text-embedding-004", "text-embedding-004"),
        ("mistral", "mistral/mistral-embed", "mistral-embed"),
        ("voyage", "voyage/voyage-3-lite", "voyage-3-lite"),
    ],
)
def test_provider_prefix_is_stripped_from_the_model(
    server: FakeEmbeddingServer, pid: str, configured: str, sent: str, tmp_path: Path
) -> None:
    runtime, _ = h.runtime_for(server, pid, tmp_path, model=configured)
    runtime.embed_query("hello")
    assert runtime.provider is not None and runtime.provider.model == sent
    assert request_model(server, pid) == sent


@pytest.mark.parametrize("pid", ["openai", "gemini", "mistral"])
def test_headers_merge_with_provider_section_winning(
    server: FakeEmbeddingServer, pid: str, tmp_path: Path
) -> None:
    runtime, _ = h.runtime_for(
        server,
        pid,
        tmp_path,
        remote={"headers": {"X-Team": "memory", "X-Route": "remote"}},
        section={"headers": {"x-route": "section"}},
    )
    runtime.embed_query("hello")
    call = server.calls(h.EMBED_ROUTE[pid])[-1]
    assert call.headers["x-team"] == "memory"
    assert call.headers["x-route"] == "section"


def test_voyage_refuses_headers_it_cannot_send(tmp_path: Path) -> None:
    with pytest.raises(ProviderUnavailableError, match="X-Proxy-Token"):
        h.create_provider(
            "voyage", tmp_path, remote={"api_key": "k", "headers": {"X-Proxy-Token": "t"}}
        )


@providers
def test_output_dimensionality_is_requested(
    server: FakeEmbeddingServer, pid: str, tmp_path: Path
) -> None:
    runtime, _ = h.runtime_for(server, pid, tmp_path, section={"output_dimensionality": 8})
    runtime.embed_documents(["x"])
    body = server.calls(h.EMBED_ROUTE[pid])[-1].json
    sent = body["requests"][0] if pid == "gemini" else body
    assert sent[DIMENSION_FIELD[pid]] == 8


# --- retries and errors -------------------------------------------------------------------------


@providers
def test_rate_limit_is_retried_after_half_a_second(
    server: FakeEmbeddingServer, pid: str, tmp_path: Path
) -> None:
    runtime, delays = h.runtime_for(server, pid, tmp_path)
    server.push(Reply.error(429, "Rate limit reached, slow down"))

    vector = runtime.embed_query("hello")

    np.testing.assert_allclose(vector, h.unit(fake_vector("hello")), rtol=1e-5)
    assert len(embed_calls(server, pid)) == 2  # the SDK itself never retried
    assert len(delays) == 1 and 0.5 <= delays[0] <= 0.6


@providers
def test_server_error_storm_exhausts_three_retries(
    server: FakeEmbeddingServer, pid: str, tmp_path: Path
) -> None:
    runtime, delays = h.runtime_for(server, pid, tmp_path)
    server.push(*[Reply.error(500, "upstream exploded")] * 4)

    with pytest.raises(ProviderError) as info:
        runtime.embed_documents(["a", "b"])

    assert info.value.retryable and info.value.status_code == 500
    assert len(embed_calls(server, pid)) == 4
    assert len(delays) == 3
    for delay, base in zip(delays, (0.5, 1.0, 2.0), strict=True):
        assert base <= delay <= base * 1.2


@providers
def test_unauthorized_fails_at_once_with_the_provider_message(
    server: FakeEmbeddingServer, pid: str, tmp_path: Path
) -> None:
    runtime, delays = h.runtime_for(server, pid, tmp_path)
    server.push(Reply.error(401, "Incorrect API key provided: sk-wrong"))

    with pytest.raises(ProviderError) as info:
        runtime.embed_query("hello")

    assert "Incorrect API key provided" in str(info.value)
    assert info.value.status_code == 401 and not info.value.retryable
    assert info.value.provider == pid
    assert delays == [] and len(embed_calls(server, pid)) == 1


@providers
def test_bad_request_is_not_retried(server: FakeEmbeddingServer, pid: str, tmp_path: Path) -> None:
    runtime, delays = h.runtime_for(server, pid, tmp_path)
    server.push(Reply.error(400, "input is too long"))
    with pytest.raises(ProviderError, match="input is too long") as info:
        runtime.embed_documents(["x"])
    assert info.value.status_code == 400 and delays == []


@providers
def test_timeouts_are_retried_then_fail(
    server: FakeEmbeddingServer, pid: str, tmp_path: Path
) -> None:
    runtime, delays = h.runtime_for(server, pid, tmp_path, remote={"timeout_seconds": 0.2})
    server.push(*[Reply.slow(30)] * 4)

    with pytest.raises(ProviderError, match="timed out") as info:
        runtime.embed_query("hello")

    assert info.value.retryable
    assert len(delays) == 3
    assert len(embed_calls(server, pid)) == 4
    assert server.delays_served == 0  # four client timeouts, never a wait for the server


@providers
def test_malformed_json_is_a_provider_error(
    server: FakeEmbeddingServer, pid: str, tmp_path: Path
) -> None:
    runtime, delays = h.runtime_for(server, pid, tmp_path)
    server.push(Reply.malformed())
    with pytest.raises(ProviderError, match="invalid embeddings response") as info:
        runtime.embed_documents(["x"])
    assert not info.value.retryable and delays == []


def raw_embeddings(pid: str, vectors: list[list[float]]) -> Reply:
    """A 200 response in ``pid``'s wire format carrying exactly ``vectors``."""
    if pid == "gemini":
        payload: dict[str, Any] = {"embeddings": [{"values": v} for v in vectors]}
    else:
        payload = {
            "object": "list",
            "id": "emb-x",
            "model": "m",
            "usage": {"prompt_tokens": 1, "total_tokens": 1},
            "data": [
                {"object": "embedding", "index": i, "embedding": v} for i, v in enumerate(vectors)
            ],
        }
    return Reply(body=json.dumps(payload).encode())


@providers
@pytest.mark.parametrize(
    ("vectors", "message"),
    [
        ([[0.1, 0.2], [0.3, 0.4]], "2 vectors for 3 inputs"),
        ([[0.1, 0.2], [0.3], [0.4, 0.5]], r"mixed widths \[1, 2\]"),
        ([[], [], []], "empty embedding vector"),
    ],
)
def test_unusable_vectors_are_rejected_without_retry(
    server: FakeEmbeddingServer, pid: str, vectors: list[list[float]], message: str, tmp_path: Path
) -> None:
    runtime, delays = h.runtime_for(server, pid, tmp_path)
    server.push(raw_embeddings(pid, vectors))
    with pytest.raises(ProviderError, match=message) as info:
        runtime.embed_documents(["a", "b", "c"])
    assert not info.value.retryable and delays == []
    assert runtime.provider is not None and runtime.provider.dims is None


@providers
def test_dimension_change_between_responses_is_an_error(
    server: FakeEmbeddingServer, pid: str, tmp_path: Path
) -> None:
    runtime, _ = h.runtime_for(server, pid, tmp_path)
    runtime.embed_documents(["first"])
    server.push(Reply(dims=4))
    with pytest.raises(ProviderError, match=r"4-dimensional vectors, expected 8"):
        runtime.embed_documents(["second"])


@providers
def test_response_not_matching_configured_dimensions_is_an_error(
    server: FakeEmbeddingServer, pid: str, tmp_path: Path
) -> None:
    runtime, _ = h.runtime_for(server, pid, tmp_path, section={"output_dimensionality": 16})
    with pytest.raises(ProviderError, match=r"8-dimensional vectors, expected 16"):
        runtime.embed_query("x")


def test_gemini_connection_refused_is_retryable(tmp_path: Path) -> None:
    with FakeEmbeddingServer() as gone:
        url = gone.url
    settings = h.make_settings(
        provider="gemini", providers={"gemini": {"base_url": url, "api_key": "k"}}
    )
    runtime, delays = h.make_runtime(settings, tmp_path, "gemini")
    with pytest.raises(ProviderError) as info:
        runtime.embed_query("x")
    assert info.value.retryable and len(delays) == 3


# --- keys, base URLs, cache keys ---------------------------------------------------------------


@providers
def test_missing_key_names_the_variable_and_setting(pid: str, tmp_path: Path) -> None:
    runtime, _ = h.make_runtime(h.make_settings(provider=pid), tmp_path, pid)
    with pytest.raises(ProviderUnavailableError) as info:
        runtime.embed_query("x")
    message = str(info.value)
    assert message.startswith(f"No API key found for provider {pid}")
    assert all(name in message for name in h.KEY_ENV[pid])
    assert f"providers.{pid}.api_key" in message
    with pytest.raises(ProviderUnavailableError):  # a failed selection is sticky
        runtime.embed_documents(["x"])


def test_key_precedence_section_then_remote_then_env(
    server: FakeEmbeddingServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "from-env")
    url = server.url + "/v1"

    def sent_key(**values: object) -> str:
        runtime, _ = h.make_runtime(h.make_settings(provider="openai", **values), tmp_path)
        runtime.embed_query("x")
        return server.calls("/v1/embeddings")[-1].headers["authorization"]

    assert sent_key(providers={"openai": {"base_url": url}}) == "Bearer from-env"
    assert (
        sent_key(remote={"api_key": "from-remote"}, providers={"openai": {"base_url": url}})
        == "Bearer from-remote"
    )
    assert (
        sent_key(
            remote={"api_key": "from-remote"},
            providers={"openai": {"base_url": url, "api_key": "from-section"}},
        )
        == "Bearer from-section"
    )


def test_gemini_accepts_google_api_key_and_env_name_literals(
    server: FakeEmbeddingServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GOOGLE_API_KEY", "google-key")
    gemini = {"base_url": server.url + "/v1beta"}
    runtime, _ = h.make_runtime(
        h.make_settings(provider="gemini", providers={"gemini": gemini}), tmp_path
    )
    runtime.embed_query("x")
    assert server.calls(":batchEmbedContents")[-1].headers["x-goog-api-key"] == "google-key"

    monkeypatch.setenv("GEMINI_API_KEY", "gemini-key")
    literal = h.make_settings(
        provider="gemini", remote={"api_key": "GEMINI_API_KEY"}, providers={"gemini": gemini}
    )
    runtime, _ = h.make_runtime(literal, tmp_path)
    runtime.embed_query("x")
    assert server.calls(":batchEmbedContents")[-1].headers["x-goog-api-key"] == "gemini-key"


@pytest.mark.parametrize(
    ("pid", "key", "default"),
    [
        ("openai", "k", "https://api.openai.com/v1"),
        ("gemini", "k", "https://generativelanguage.googleapis.com/v1beta"),
        ("mistral", "k", "https://api.mistral.ai/v1"),
        ("voyage", "pa-k", "https://api.voyageai.com/v1"),
        ("voyage", "al-k", "https://ai.mongodb.com/v1"),
    ],
)
def test_default_base_urls_ignore_sdk_environment(
    pid: str, key: str, default: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/elsewhere")
    monkeypatch.setenv("GOOGLE_GEMINI_BASE_URL", "http://127.0.0.1:9/elsewhere")
    provider = h.create_provider(pid, tmp_path, remote={"api_key": key})
    assert provider.base_url == default
    assert provider.cache_key_data()["base_url"] == default


def test_remote_base_url_applies_when_the_section_has_none(
    server: FakeEmbeddingServer, tmp_path: Path
) -> None:
    settings = h.make_settings(
        provider="openai", remote={"base_url": server.url + "/v1/", "api_key": "k"}
    )
    runtime, _ = h.make_runtime(settings, tmp_path, "openai")
    runtime.embed_query("x")
    assert len(server.calls("/v1/embeddings")) == 1


@pytest.mark.parametrize(
    ("configured", "route"),
    [
        ("", "/v1beta/models/gemini-embedding-001:batchEmbedContents"),
        ("/v1", "/v1/models/gemini-embedding-001:batchEmbedContents"),
        ("/v1beta/openai/", "/v1beta/models/gemini-embedding-001:batchEmbedContents"),
    ],
)
def test_gemini_base_url_may_carry_its_api_version(
    server: FakeEmbeddingServer, configured: str, route: str, tmp_path: Path
) -> None:
    settings = h.make_settings(
        provider="gemini",
        providers={"gemini": {"base_url": server.url + configured, "api_key": "k"}},
    )
    runtime, _ = h.make_runtime(settings, tmp_path, "gemini")
    runtime.embed_query("x")
    assert server.requests[-1].route == route


@pytest.mark.parametrize("configured", ["", "/v1"])
def test_mistral_base_url_with_or_without_version(
    server: FakeEmbeddingServer, configured: str, tmp_path: Path
) -> None:
    settings = h.make_settings(
        provider="mistral",
        providers={"mistral": {"base_url": server.url + configured, "api_key": "k"}},
    )
    runtime, _ = h.make_runtime(settings, tmp_path, "mistral")
    runtime.embed_query("x")
    assert server.requests[-1].route == "/v1/embeddings"


@providers
def test_provider_key_tracks_base_url_model_and_headers_but_not_auth(
    pid: str, tmp_path: Path
) -> None:
    base = {"api_key": "k1", "base_url": "http://a.test/v1"}

    def make(section: dict[str, str] = base, **values: Any) -> RemoteEmbeddingProvider:
        return h.create_provider(pid, tmp_path, providers={pid: section}, **values)

    reference = provider_key(make())
    assert provider_key(make({**base, "api_key": "k2"})) == reference
    assert provider_key(make({**base, "base_url": "http://b.test/v1"})) != reference
    assert provider_key(make(model="other-model")) != reference
    data = make().cache_key_data()
    assert data["provider"] == pid and data["model"] == h.DEFAULT_MODELS[pid]
    assert data["base_url"] == "http://a.test/v1"
    if pid == "voyage":
        return
    assert provider_key(make(remote={"headers": {"X-Tenant": "a"}})) != reference
    assert provider_key(make(remote={"headers": {"Authorization": "Bearer x"}})) == reference
    headers = {"X-B": "2", "x-goog-api-key": "secret", "X-A": "1"}
    data = make(remote={"headers": headers}).cache_key_data()
    assert data["headers"] == [["x-a", "1"], ["x-b", "2"]]


@pytest.mark.parametrize(
    ("pid", "model", "limit"),
    [
        ("openai", "text-embedding-3-small", 8192),
        ("openai", "text-embedding-ada-002", 8191),
        ("gemini", "gemini-embedding-001", 2048),
        ("gemini", "some-future-model", 2048),
        ("voyage", "voyage-3", 32000),
        ("voyage", "voyage-3-lite", 16000),
        ("mistral", "mistral-embed", 8192),
    ],
)
def test_max_input_tokens_follow_the_reference_table(
    pid: str, model: str, limit: int, tmp_path: Path
) -> None:
    provider = h.create_provider(pid, tmp_path, model=model, remote={"api_key": "k"})
    assert provider.max_input_tokens == limit


def test_merge_headers_is_case_insensitive() -> None:
    merged = merge_headers({"X-One": "a", "X-Two": "b"}, {"x-two": "c"})
    assert merged == {"X-One": "a", "x-two": "c"}


# --- selection and fallback ---------------------------------------------------------------------


def all_sections(server: FakeEmbeddingServer) -> dict[str, dict[str, str]]:
    return {pid: {"base_url": server.url + h.API_ROOT[pid]} for pid in h.PROVIDERS}


def test_auto_without_any_key_is_keyword_only_with_reasons(
    server: FakeEmbeddingServer, tmp_path: Path
) -> None:
    runtime, _ = h.make_runtime(h.make_settings(providers=all_sections(server)), tmp_path)
    assert "local" not in runtime.registry.providers
    selection = runtime.selection()
    assert selection.provider is None
    reason = selection.unavailable_reason or ""
    for pid in ("openai", "gemini", "voyage", "mistral"):
        assert f"{pid}: No API key found for provider {pid}" in reason
    assert reason.index("openai:") < reason.index("gemini:") < reason.index("voyage:")
    assert reason.index("voyage:") < reason.index("mistral:")
    assert server.requests == []


def test_auto_picks_voyage_when_only_its_key_is_set(
    server: FakeEmbeddingServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("VOYAGE_API_KEY", "voyage-key")
    runtime, _ = h.make_runtime(h.make_settings(providers=all_sections(server)), tmp_path)
    assert "local" not in runtime.registry.providers
    selection = runtime.selection()
    assert selection.spec is not None and selection.spec.id == "voyage"
    runtime.embed_query("hello")
    assert server.calls("/v1/embeddings")[-1].headers["authorization"] == "Bearer voyage-key"


def test_auto_prefers_openai_over_later_providers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MISTRAL_API_KEY", "m")
    monkeypatch.setenv("GEMINI_API_KEY", "g")
    monkeypatch.setenv("OPENAI_API_KEY", "o")
    runtime, _ = h.make_runtime(h.make_settings(), tmp_path)
    assert runtime.selection().spec is not None
    assert runtime.selection().spec.id == "openai"  # type: ignore[union-attr]


def test_explicit_provider_falls_back_at_creation(
    server: FakeEmbeddingServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("VOYAGE_API_KEY", "voyage-key")
    settings = h.make_settings(
        provider="openai",
        model="text-embedding-3-large",
        fallback="voyage",
        providers=all_sections(server),
    )
    runtime, _ = h.make_runtime(settings, tmp_path)
    selection = runtime.selection()
    assert selection.spec is not None and selection.spec.id == "voyage"
    assert selection.fallback is not None
    assert selection.fallback.from_ == "openai" and selection.fallback.to == "voyage"
    assert "OPENAI_API_KEY" in selection.fallback.reason
    assert runtime.provider is not None and runtime.provider.model == "voyage-3.5"
    runtime.embed_documents(["doc"])
    assert server.calls("/v1/embeddings")[-1].json["model"] == "voyage-3.5"


def test_explicit_provider_and_fallback_both_missing_keys_go_keyword_only(
    server: FakeEmbeddingServer, tmp_path: Path
) -> None:
    settings = h.make_settings(
        provider="gemini", fallback="mistral", providers=all_sections(server)
    )
    runtime, _ = h.make_runtime(settings, tmp_path)
    selection = runtime.selection()
    assert selection.provider is None and selection.fallback is not None
    assert (selection.fallback.from_, selection.fallback.to) == ("gemini", "none")
    reason = selection.fallback.reason
    assert "GEMINI_API_KEY" in reason
    assert "fallback to mistral failed" in reason and "MISTRAL_API_KEY" in reason


def test_runtime_fallback_switches_provider_model_and_key(
    server: FakeEmbeddingServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "o")
    monkeypatch.setenv("GEMINI_API_KEY", "g")
    settings = h.make_settings(provider="openai", fallback="gemini", providers=all_sections(server))
    runtime, _ = h.make_runtime(settings, tmp_path)
    runtime.embed_documents(["before"])
    old_key = runtime.provider_key()

    assert runtime.activate_fallback("embeddings failed: quota") is True

    provider = runtime.provider
    assert provider is not None and provider.id == "gemini"
    assert provider.model == "gemini-embedding-001"
    assert runtime.provider_key() != old_key
    status = runtime.selection().fallback
    assert status is not None and status.from_ == "openai" and status.to == "gemini"
    assert status.reason == "embeddings failed: quota"
    runtime.embed_documents(["after"])
    assert len(server.calls(":batchEmbedContents")) == 1
    assert runtime.activate_fallback("gemini failed too") is True
    assert runtime.provider is None
    assert runtime.activate_fallback("again") is False


# --- packaging and configuration ----------------------------------------------------------------


def test_specs_describe_each_provider() -> None:
    specs = h.make_registry().providers
    assert {pid: specs[pid].auto_priority for pid in h.PROVIDERS} == {
        "openai": 20,
        "gemini": 30,
        "mistral": 50,
        "voyage": 40,
    }
    for pid in h.PROVIDERS:
        assert specs[pid].transport == "remote"
        assert specs[pid].default_model == h.DEFAULT_MODELS[pid]
        assert specs[pid].key_env == h.KEY_ENV[pid]


def test_entry_points_are_installed() -> None:
    points = {ep.name: ep.value for ep in metadata.entry_points(group="memwell")}
    for pid in h.PROVIDERS:
        assert points[pid] == f"memwell_{pid}.plugin"


def test_unknown_provider_section_key_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as info:
        load_settings(
            overrides={"providers": {"openai": {"base_ur": "http://x"}}},
            environ={},
            user_config=tmp_path / "none.toml",
            registry=h.make_registry("openai"),
        )
    assert info.value.key == "providers.openai.base_ur"


def test_non_positive_output_dimensionality_is_rejected(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="output_dimensionality"):
        load_settings(
            overrides={"providers": {"gemini": {"output_dimensionality": 0}}},
            environ={},
            user_config=tmp_path / "none.toml",
            registry=h.make_registry("gemini"),
        )
