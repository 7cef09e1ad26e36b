"""Slug rules for session-note names, and the generator/keyword choice."""

from __future__ import annotations

from datetime import date

import pytest
from hypothesis import given
from hypothesis import strategies as st
from memwell.contract.errors import ProviderError
from memwell.retrieval.decay import date_from_path, is_evergreen
from memwell.sources.paths import is_memory_path
from memwell.textgen.extractive import ExtractiveGenerator
from memwell.writing.slugs import (
    MAX_SLUG_LENGTH,
    SLUG_INSTRUCTIONS,
    clean_slug,
    dated_note_path,
    generated_slug,
    is_slug,
    keyword_slug,
)


class Scripted:
    """A generator answering with a fixed text, or raising; records what it was asked."""

    id = "scripted"
    model = "scripted-1"

    def __init__(self, answer: str | Exception) -> None:
        self.answer = answer
        self.calls: list[tuple[str, int, str | None]] = []

    def generate(self, prompt: str, *, max_tokens: int, system: str | None = None) -> str:
        self.calls.append((prompt, max_tokens, system))
        if isinstance(self.answer, Exception):
            raise self.answer
        return self.answer


@pytest.mark.parametrize(
    ("raw", "slug"),
    [
        ("API Design", "api-design"),
        ('"vendor-pitch"', "vendor-pitch"),
        ("  Bug_Fix!!  ", "bug-fix"),
        ("Café Crème", "cafe-creme"),
        ("数据库", ""),
        ("a" * 40, "a" * MAX_SLUG_LENGTH),
        ("billing-cursor-pagination-strategy", "billing-cursor-pagination"),
        ("../../etc/passwd", "etc-passwd"),
        ("slug.md", "slug-md"),
    ],
)
def test_clean_slug(raw: str, slug: str) -> None:
    assert clean_slug(raw) == slug


@given(st.text(max_size=200))
def test_clean_slug_always_gives_a_slug_or_nothing(text: str) -> None:
    slug = clean_slug(text)
    assert slug == "" or is_slug(slug)
    assert clean_slug(slug) == slug  # idempotent


@given(st.lists(st.text(max_size=80), max_size=12))
def test_keyword_slug_is_a_deterministic_slug(texts: list[str]) -> None:
    slug = keyword_slug(texts)
    assert slug == "" or is_slug(slug)
    assert keyword_slug(list(texts)) == slug


def test_keyword_slug_ranks_by_messages_mentioning_a_word_then_first_seen() -> None:
    texts = [
        "Should the billing API use cursor pagination?",
        "Cursor pagination keeps the billing API stable.",
        "Thanks, sounds good. Let's use cursor pagination for billing.",
    ]
    assert keyword_slug(texts) == "billing-cursor-pagination"


def test_keyword_slug_drops_filler_numbers_and_non_latin_words() -> None:
    assert keyword_slug(["thanks", "okay 2026", "yes great"]) == ""
    assert keyword_slug(["数据库 migration plan"]) == "migration-plan"


@given(
    day=st.dates(min_value=date(1970, 1, 1), max_value=date(9999, 12, 31)),
    raw=st.text(min_size=1, max_size=60),
    attempt=st.integers(min_value=1, max_value=999),
)
def test_dated_note_paths_are_memory_files_dated_by_their_name(
    day: date, raw: str, attempt: int
) -> None:
    slug = clean_slug(raw) or "0000"
    path = dated_note_path(day, slug, attempt)
    assert path.startswith("memory/") and path.count("/") == 1
    assert is_memory_path(path)
    assert date_from_path(path) == day
    assert not is_evergreen(path, "memory")


def test_dated_note_path_suffixes_and_rejects_non_slugs() -> None:
    assert dated_note_path(date(2026, 1, 16), "api-design") == "memory/2026-01-16-api-design.md"
    assert dated_note_path(date(2026, 1, 16), "api-design", 3) == (
        "memory/2026-01-16-api-design-3.md"
    )
    for slug in ("", "../x", "Upper", "a/b"):
        with pytest.raises(ValueError):
            dated_note_path(date(2026, 1, 16), slug)


TEXTS = ["We settled the vendor pitch for Acme.", "The Acme vendor pitch is on Friday."]


def test_generated_slug_uses_the_generator_with_the_reference_instructions() -> None:
    generator = Scripted("Vendor Pitch")
    choice = generated_slug(TEXTS, generator)
    assert (choice.slug, choice.source, choice.note) == ("vendor-pitch", "scripted", None)
    [(prompt, max_tokens, system)] = generator.calls
    assert prompt == "\n".join(TEXTS) and system == SLUG_INSTRUCTIONS
    assert 0 < max_tokens <= 32


def test_generated_slug_falls_back_to_keywords_when_the_generator_fails() -> None:
    choice = generated_slug(TEXTS, Scripted(ProviderError("HTTP 500", provider="scripted")))
    assert choice.source == "keywords" and choice.slug == keyword_slug(TEXTS)
    assert choice.note is not None and "HTTP 500" in choice.note


def test_generated_slug_falls_back_when_the_answer_has_no_usable_slug() -> None:
    choice = generated_slug(TEXTS, Scripted("???"))
    assert choice.source == "keywords" and "no usable slug" in (choice.note or "")


def test_the_extractive_generator_gives_the_keyword_slug() -> None:
    choice = generated_slug(TEXTS, ExtractiveGenerator())
    assert (choice.slug, choice.source, choice.note) == ("vendor-pitch-acme", "keywords", None)
