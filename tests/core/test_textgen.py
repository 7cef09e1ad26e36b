"""The text-generation hook: registry, selection, config sections and the extractive default."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from memwell.contract.config import MemwellSettings, load_settings
from memwell.contract.descriptors import ProviderContext, TextGeneratorSpec
from memwell.contract.errors import ConfigError, ProviderError, ProviderUnavailableError
from memwell.contract.hookspecs import hookimpl
from memwell.contract.text_generator import TextGenerator
from memwell.registry.plugins import PluginRegistry
from memwell.textgen.extractive import ExtractiveGenerator, extractive_summary, split_sentences
from memwell.textgen.selection import select_text_generator
from pydantic import BaseModel, ConfigDict


class Echo:
    def __init__(self, id: str, model: str) -> None:
        self.id = id
        self.model = model

    def generate(self, prompt: str, *, max_tokens: int, system: str | None = None) -> str:
        return f"{self.id}:{prompt[:max_tokens]}"


class EchoConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")
    style: str = "plain"


def echo_spec(id: str, priority: int | None, *, unavailable: bool = False) -> TextGeneratorSpec:
    def create(ctx: ProviderContext) -> TextGenerator:
        if unavailable:
            raise ProviderUnavailableError(f"{id} has no key", provider=id)
        return Echo(id, ctx.model)

    return TextGeneratorSpec(
        id=id,
        create=create,
        default_model=f"{id}-default",
        transport="remote",
        auto_priority=priority,
        config_model=EchoConfig,
    )


class Generators:
    def __init__(self, *specs: TextGeneratorSpec) -> None:
        self.specs = specs

    @hookimpl
    def memwell_text_generators(self) -> list[TextGeneratorSpec]:
        return list(self.specs)


def registry_with(*specs: TextGeneratorSpec, name: str = "gens") -> PluginRegistry:
    registry = PluginRegistry(load_entry_points=False)
    registry.register(Generators(*specs), name)
    return registry


def settings(**textgen: str) -> MemwellSettings:
    return MemwellSettings(textgen=textgen)


# --- registry -----------------------------------------------------------------------------------


def test_registry_collects_text_generators_and_names_their_plugin() -> None:
    registry = registry_with(echo_spec("b", 2), echo_spec("a", None))
    assert list(registry.text_generators) == ["a", "b"]
    assert registry.infos["gens"].text_generators == ["b", "a"]  # in the order yielded


def test_duplicate_text_generator_ids_disable_both_and_name_both_plugins() -> None:
    registry = registry_with(echo_spec("same", 1), name="first")
    registry.register(Generators(echo_spec("same", 2)), "second")
    assert "same" not in registry.text_generators
    hint = registry.unknown_name_hint("text generator", "same")
    assert "'first' and 'second'" in hint and "both are disabled" in hint
    assert registry.infos["first"].status == registry.infos["second"].status == "conflict"


def test_a_raising_hook_is_reported_and_skipped() -> None:
    class Broken:
        @hookimpl
        def memwell_text_generators(self) -> list[TextGeneratorSpec]:
            raise RuntimeError("boom")

    registry = registry_with(echo_spec("ok", 1))
    registry.register(Broken(), "broken")
    assert list(registry.text_generators) == ["ok"]
    assert registry.infos["broken"].status == "error"
    assert "boom" in (registry.infos["broken"].error or "")


# --- selection ----------------------------------------------------------------------------------


def test_none_is_the_default_and_offline(tmp_path: Path) -> None:
    selection = select_text_generator(MemwellSettings(), registry_with(echo_spec("x", 1)), tmp_path)
    assert selection.offline and isinstance(selection.generator, ExtractiveGenerator)
    assert selection.requested == "none" and selection.note is None


def test_auto_skips_unavailable_and_takes_the_lowest_priority(tmp_path: Path) -> None:
    registry = registry_with(
        echo_spec("first", 1, unavailable=True),
        echo_spec("second", 2),
        echo_spec("third", 3),
        echo_spec("never", None),
    )
    selection = select_text_generator(settings(provider="auto"), registry, tmp_path)
    assert selection.generator.id == "second"
    assert selection.generator.model == "second-default"


def test_auto_with_nothing_available_says_so_and_stays_offline(tmp_path: Path) -> None:
    registry = registry_with(echo_spec("a", 1, unavailable=True), echo_spec("manual", None))
    selection = select_text_generator(settings(provider="auto"), registry, tmp_path)
    assert selection.offline
    assert selection.note is not None and "a: a has no key" in selection.note


def test_auto_moves_past_a_buggy_plugin(tmp_path: Path) -> None:
    def crash(ctx: ProviderContext) -> TextGenerator:
        raise KeyError("oops")

    buggy = TextGeneratorSpec(
        id="buggy", create=crash, default_model="m", transport="local", auto_priority=0
    )
    registry = registry_with(buggy, echo_spec("good", 5))
    assert select_text_generator(settings(provider="auto"), registry, tmp_path).generator.id == (
        "good"
    )
    with pytest.raises(ProviderError, match="text generator 'buggy' failed to start: KeyError"):
        select_text_generator(settings(provider="buggy"), registry, tmp_path)


def test_explicit_generator_gets_the_configured_model(tmp_path: Path) -> None:
    registry = registry_with(echo_spec("x", None))
    chosen = select_text_generator(settings(provider="x", model="big"), registry, tmp_path)
    assert chosen.generator.model == "big" and not chosen.offline


def test_explicit_unavailable_generator_fails_closed(tmp_path: Path) -> None:
    registry = registry_with(echo_spec("x", 1, unavailable=True))
    with pytest.raises(ProviderUnavailableError, match="x has no key"):
        select_text_generator(settings(provider="x"), registry, tmp_path)


def test_unknown_generator_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"unknown text generator 'x'.*none, auto"):
        empty = PluginRegistry(load_entry_points=False)
        select_text_generator(settings(provider="x"), empty, tmp_path)


# --- configuration ------------------------------------------------------------------------------


def test_textgen_keys_validate_and_load_from_the_environment(tmp_path: Path) -> None:
    loaded = load_settings(
        tmp_path,
        environ={"MEMWELL_TEXTGEN__PROVIDER": "auto", "MEMWELL_TEXTGEN__MODEL": "m1"},
        user_config=tmp_path / "none.toml",
    )
    assert (loaded.textgen.provider, loaded.textgen.model) == ("auto", "m1")
    (tmp_path / "memwell.toml").write_text("[textgen]\nproviderr = 'auto'\n", encoding="utf-8")
    with pytest.raises(ConfigError, match=r"unknown config key 'textgen\.providerr'"):
        load_settings(tmp_path, environ={}, user_config=tmp_path / "none.toml")


def test_provider_section_of_a_generator_only_plugin_is_validated_by_its_model(
    tmp_path: Path,
) -> None:
    registry = registry_with(echo_spec("echo", None))
    config = tmp_path / "memwell.toml"
    config.write_text("[providers.echo]\nstyle = 'loud'\n", encoding="utf-8")
    loaded = load_settings(tmp_path, environ={}, user_config=tmp_path / "n.toml", registry=registry)
    assert loaded.providers["echo"] == {"style": "loud"}
    config.write_text("[providers.echo]\ncolour = 'red'\n", encoding="utf-8")
    with pytest.raises(ConfigError, match=r"providers\.echo\.colour"):
        load_settings(tmp_path, environ={}, user_config=tmp_path / "n.toml", registry=registry)
    config.write_text("[providers.nope]\nx = 1\n", encoding="utf-8")
    with pytest.raises(ConfigError, match=r"'providers\.nope'.*installed: echo"):
        load_settings(tmp_path, environ={}, user_config=tmp_path / "n.toml", registry=registry)


# --- the extractive generator -------------------------------------------------------------------

CONVERSATION = (
    "We need to pick a pagination scheme for the billing API. "
    "Offset pagination breaks when rows are inserted. "
    "The weather was nice today. "
    "Cursor pagination keeps the billing API stable while rows change."
)


def test_extractive_summary_keeps_the_keyword_dense_sentences_in_order() -> None:
    summary = extractive_summary(CONVERSATION, max_tokens=40)
    assert "weather" not in summary
    assert summary.startswith("We need to pick a pagination scheme")
    assert summary.endswith("while rows change.")
    assert len(summary) <= 40 * 4


def test_extractive_summary_cuts_one_long_sentence_at_a_word() -> None:
    summary = extractive_summary("alpha beta gamma delta epsilon zeta eta theta", max_tokens=3)
    assert summary == "alpha beta"


def test_extractive_generator_ignores_the_system_prompt_and_is_deterministic() -> None:
    generator = ExtractiveGenerator()
    first = generator.generate(CONVERSATION, max_tokens=20, system="Reply in French.")
    assert first == generator.generate(CONVERSATION, max_tokens=20)
    assert first and first in CONVERSATION
    assert generator.generate("   \n ", max_tokens=5) == ""


def _joins_a_subsequence(summary: str, sentences: list[str]) -> bool:
    """Whether ``summary`` is some in-order selection of ``sentences`` joined by spaces."""

    def rest(pos: int, start: int) -> bool:
        if pos == len(summary):
            return True
        for index in range(start, len(sentences)):
            part = sentences[index]
            end = pos + len(part)
            if not summary.startswith(part, pos):
                continue
            if end == len(summary) or (summary[end] == " " and rest(end + 1, index + 1)):
                return True
        return False

    return rest(0, 0)


@given(st.text(max_size=300), st.integers(min_value=1, max_value=60))
def test_extractive_summary_stays_in_budget_and_uses_only_input_sentences(
    text: str, max_tokens: int
) -> None:
    summary = extractive_summary(text, max_tokens=max_tokens)
    sentences = split_sentences(text)
    assert len(summary) <= max_tokens * 4
    assert bool(summary) == bool(sentences)
    truncated = any(s.startswith(summary) and len(s) > max_tokens * 4 for s in sentences)
    assert truncated or _joins_a_subsequence(summary, sentences)
