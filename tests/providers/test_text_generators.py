"""The OpenAI, Gemini and Mistral text generators through their real SDKs and the fake server."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import remote_harness as h
from fake_embedding_server import FakeEmbeddingServer, Reply, fake_generation
from memwell.contract.config import load_settings
from memwell.contract.errors import ConfigError, ProviderError, ProviderUnavailableError
from memwell.providers.retry import RetryPolicy
from memwell.textgen.remote import RemoteTextGenerator
from memwell.textgen.selection import select_text_generator
from memwell.writing.slugs import SLUG_INSTRUCTIONS, generated_slug

server = pytest.fixture(h.serve)
_clean_env = pytest.fixture(autouse=True)(h.clean_env)

GENERATORS = ("openai", "gemini", "mistral")
DEFAULT_MODELS = {
    "openai": "gpt-4o-mini",
    "gemini": "gemini-2.5-flash",
    "mistral": "mistral-small-latest",
}
ROUTE = {
    "openai": "/chat/completions",
    "gemini": ":generateContent",
    "mistral": "/chat/completions",
}
AUTH = {
    "openai": ("authorization", "Bearer test-key"),
    "gemini": ("x-goog-api-key", "test-key"),
    "mistral": ("authorization", "Bearer test-key"),
}
generators = pytest.mark.parametrize("pid", GENERATORS)


def generator_for(
    server: FakeEmbeddingServer, pid: str, tmp_path: Path, **values: Any
) -> tuple[RemoteTextGenerator, list[float]]:
    """``pid``'s generator selected explicitly, pointed at ``server``; retry sleeps recorded."""
    settings = h.make_settings(
        textgen={"provider": pid, **values.pop("textgen", {})},
        providers={pid: h.section(server, pid)},
        **values,
    )
    selection = select_text_generator(settings, h.make_registry(*GENERATORS), tmp_path)
    generator = selection.generator
    assert isinstance(generator, RemoteTextGenerator)
    delays: list[float] = []
    generator.retry = RetryPolicy(sleep=delays.append)
    return generator, delays


def sent(server: FakeEmbeddingServer, pid: str) -> dict[str, Any]:
    call = server.calls(ROUTE[pid])[-1]
    body: dict[str, Any] = call.json
    return body


def system_and_prompt(pid: str, body: dict[str, Any]) -> tuple[str | None, str]:
    if pid == "gemini":
        system = body.get("systemInstruction")
        text = " ".join(part["text"] for part in system["parts"]) if system else None
        return text, body["contents"][-1]["parts"][0]["text"]
    messages = body["messages"]
    system = next((m["content"] for m in messages if m["role"] == "system"), None)
    return system, messages[-1]["content"]


def max_tokens_sent(pid: str, body: dict[str, Any]) -> int:
    if pid == "gemini":
        return int(body["generationConfig"]["maxOutputTokens"])
    return int(body["max_completion_tokens" if pid == "openai" else "max_tokens"])


@generators
def test_generate_sends_prompt_system_and_budget_and_returns_the_answer(
    server: FakeEmbeddingServer, pid: str, tmp_path: Path
) -> None:
    generator, _ = generator_for(server, pid, tmp_path)
    server.generations.append("  billing-api \n")
    answer = generator.generate("We discussed the billing API.", max_tokens=12, system="Be brief.")
    assert answer == "billing-api"
    body = sent(server, pid)
    assert system_and_prompt(pid, body) == ("Be brief.", "We discussed the billing API.")
    assert max_tokens_sent(pid, body) == 12
    name, value = AUTH[pid]
    assert server.calls(ROUTE[pid])[-1].headers[name] == value


@generators
def test_default_model_and_configured_model(
    server: FakeEmbeddingServer, pid: str, tmp_path: Path
) -> None:
    generator, _ = generator_for(server, pid, tmp_path)
    assert generator.model == DEFAULT_MODELS[pid]
    custom, _ = generator_for(server, pid, tmp_path, textgen={"model": "tiny-model"})
    assert custom.generate("hello there", max_tokens=5) == fake_generation("hello there")
    call = server.calls(ROUTE[pid])[-1]
    model = call.route.split("/models/")[1].split(":")[0] if pid == "gemini" else call.json["model"]
    assert model == "tiny-model"


@generators
def test_no_system_prompt_sends_no_system_part(
    server: FakeEmbeddingServer, pid: str, tmp_path: Path
) -> None:
    generator, _ = generator_for(server, pid, tmp_path)
    generator.generate("just the prompt", max_tokens=4)
    assert system_and_prompt(pid, sent(server, pid)) == (None, "just the prompt")


@generators
def test_rate_limit_is_retried_then_succeeds(
    server: FakeEmbeddingServer, pid: str, tmp_path: Path
) -> None:
    generator, delays = generator_for(server, pid, tmp_path)
    server.push(Reply.error(429, "slow down"), Reply.error(503, "busy"))
    server.generations.append("done")
    assert generator.generate("x y z", max_tokens=3) == "done"
    assert len(server.calls(ROUTE[pid])) == 3
    assert len(delays) == 2


@generators
def test_client_error_is_not_retried_and_names_text_generation(
    server: FakeEmbeddingServer, pid: str, tmp_path: Path
) -> None:
    generator, delays = generator_for(server, pid, tmp_path)
    server.push(Reply.error(400, "bad model"))
    with pytest.raises(ProviderError) as caught:
        generator.generate("x", max_tokens=3)
    assert f"{pid} text generation request failed (HTTP 400)" in str(caught.value)
    assert caught.value.retryable is False and delays == []
    assert len(server.calls(ROUTE[pid])) == 1


@generators
def test_empty_answer_is_an_error_not_an_empty_slug(
    server: FakeEmbeddingServer, pid: str, tmp_path: Path
) -> None:
    generator, _ = generator_for(server, pid, tmp_path)
    server.generations.append("   ")
    with pytest.raises(ProviderError, match="returned no text"):
        generator.generate("x", max_tokens=3)


@generators
def test_malformed_response_is_a_provider_error(
    server: FakeEmbeddingServer, pid: str, tmp_path: Path
) -> None:
    generator, _ = generator_for(server, pid, tmp_path)
    server.push(Reply.malformed())
    with pytest.raises(ProviderError) as caught:
        generator.generate("x", max_tokens=3)
    assert caught.value.retryable is False


def test_max_tokens_must_be_positive(server: FakeEmbeddingServer, tmp_path: Path) -> None:
    generator, _ = generator_for(server, "openai", tmp_path)
    with pytest.raises(ValueError, match="max_tokens"):
        generator.generate("x", max_tokens=0)
    assert server.requests == []


# --- selection ------------------------------------------------------------------------------


def test_auto_without_keys_uses_the_extractive_generator_and_says_why(tmp_path: Path) -> None:
    settings = h.make_settings(textgen={"provider": "auto"})
    selection = select_text_generator(settings, h.make_registry(*GENERATORS), tmp_path)
    assert selection.offline
    assert selection.note is not None
    for pid in GENERATORS:
        assert f"No API key found for provider {pid}" in selection.note


def test_auto_picks_the_first_generator_with_a_key_in_priority_order(
    server: FakeEmbeddingServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MISTRAL_API_KEY", "m-key")
    monkeypatch.setenv("GEMINI_API_KEY", "g-key")
    settings = h.make_settings(textgen={"provider": "auto"})
    selection = select_text_generator(settings, h.make_registry(*GENERATORS), tmp_path)
    assert selection.generator.id == "gemini" and selection.note is None
    assert server.requests == []  # selecting never calls the API


def test_default_is_offline_even_with_keys(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "o-key")
    selection = select_text_generator(h.make_settings(), h.make_registry(*GENERATORS), tmp_path)
    assert selection.offline and selection.requested == "none"


def test_explicit_generator_without_key_fails_closed(tmp_path: Path) -> None:
    settings = h.make_settings(textgen={"provider": "mistral"})
    with pytest.raises(ProviderUnavailableError, match="MISTRAL_API_KEY"):
        select_text_generator(settings, h.make_registry(*GENERATORS), tmp_path)


def test_unknown_generator_names_the_key_and_the_choices(tmp_path: Path) -> None:
    settings = h.make_settings(textgen={"provider": "gpt"})
    with pytest.raises(ConfigError, match=r"textgen\.provider") as caught:
        select_text_generator(settings, h.make_registry(*GENERATORS), tmp_path)
    assert "none, auto, gemini, mistral, openai" in str(caught.value)


def test_key_from_the_environment_and_base_url_from_remote(
    server: FakeEmbeddingServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "env-key")
    settings = h.make_settings(
        textgen={"provider": "openai"}, remote={"base_url": server.url + "/v1"}
    )
    generator = select_text_generator(settings, h.make_registry("openai"), tmp_path).generator
    generator.generate("hi", max_tokens=2)
    assert server.calls("/v1/chat/completions")[-1].headers["authorization"] == "Bearer env-key"


def test_config_file_textgen_section_and_shared_provider_section(
    server: FakeEmbeddingServer, tmp_path: Path
) -> None:
    (tmp_path / "memwell.toml").write_text(
        '[textgen]\nprovider = "mistral"\nmodel = "mistral-tiny"\n'
        f'[providers.mistral]\nbase_url = "{server.url}/v1"\napi_key = "file-key"\n',
        encoding="utf-8",
    )
    registry = h.make_registry(*GENERATORS)
    settings = load_settings(tmp_path, registry=registry, user_config=tmp_path / "none.toml")
    generator = select_text_generator(settings, registry, tmp_path).generator
    assert generator.generate("hi", max_tokens=2) == fake_generation("hi")
    call = server.calls("/v1/chat/completions")[-1]
    assert call.json["model"] == "mistral-tiny"
    assert call.headers["authorization"] == "Bearer file-key"


@generators
def test_session_slug_from_the_model_with_the_conversation_as_data(
    server: FakeEmbeddingServer, pid: str, tmp_path: Path
) -> None:
    generator, _ = generator_for(server, pid, tmp_path)
    server.generations.append('"Vendor Pitch"')
    texts = ["We rehearsed the Acme vendor pitch.", "Friday at ten works."]
    choice = generated_slug(texts, generator)
    assert (choice.slug, choice.source, choice.note) == ("vendor-pitch", pid, None)
    system, prompt = system_and_prompt(pid, sent(server, pid))
    assert system == SLUG_INSTRUCTIONS and prompt == "\n".join(texts)


def test_session_slug_survives_a_failing_model(server: FakeEmbeddingServer, tmp_path: Path) -> None:
    generator, _ = generator_for(server, "openai", tmp_path)
    server.push(*[Reply.error(500, "down")] * 4)
    choice = generated_slug(["Kubernetes upgrade window"], generator)
    assert choice.source == "keywords" and choice.slug == "kubernetes-upgrade-window"
    assert choice.note is not None and "HTTP 500" in choice.note
