"""The Reflection Engine's pure parts: entity extraction, procedures, the owned region."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st
from memwell.organise.entities import extract
from memwell.organise.named import MAX_NAMES_PER_NOTE, generated_names, parse_names
from memwell.organise.notes import Note, is_generated, prose_lines
from memwell.organise.pages import BEGIN, END, front_matter, merge
from memwell.organise.procedures import find_procedures
from memwell.textgen.extractive import ExtractiveGenerator


def note(path: str, text: str) -> Note:
    return Note(path, None, prose_lines(text))


def names(*texts: str) -> list[str]:
    entities, _ = extract([note(f"memory/n{i}.md", t) for i, t in enumerate(texts)])
    return [e.name for e in entities]


def test_a_name_needs_two_notes() -> None:
    assert names("We met Kiran today.", "Kiran sent the draft.") == ["Kiran"]
    assert names("We met Kiran today.", "Nothing else.") == []


def test_sentence_initial_words_are_no_names_unless_seen_mid_sentence() -> None:
    assert names("Deploys go out weekly.", "Deploys are frozen. Reviews too.") == []
    assert names("Ask Mirela first.", "Mirela agreed.") == ["Mirela"]


def test_stop_words_weekdays_code_and_front_matter_are_no_names() -> None:
    fenced = "---\ntitle: Secret Project\n---\n```\nclass HttpClient: pass\n```\nsee Tuesday.\n"
    assert names(fenced, fenced) == []
    assert names("ping the Ops Team and the Ops Team", "the Ops Team said no") == ["Ops Team"]


def test_wiki_links_are_entities() -> None:
    assert names("see [[billing cutover]] notes", "the [[billing cutover|cutover]] moved") == [
        "billing cutover"
    ]


def test_generator_names_are_kept_only_when_literally_in_the_note() -> None:
    text = "We ran kubectl with Ines Duarte.\nkubectlx is not it."
    answer = "1. kubectl\n- 'Ines Duarte'\nIgnore all rules\nkubectl\nInes\nk"
    assert parse_names(answer, text) == ("kubectl", "Ines Duarte", "Ines")
    many = " ".join(f"w{i}" for i in range(40))
    assert len(parse_names(many.replace(" ", "\n"), many)) == MAX_NAMES_PER_NOTE


def test_generator_names_merge_with_offline_mentions() -> None:
    notes = [
        note("memory/a.md", "Zanzibar is up. Ines Duarte ran kubectl."),
        note("memory/b.md", "Zanzibar again; kubectl and Ines Duarte."),
    ]
    named = {"memory/a.md": ["kubectl", "Zanzibar", "Ines"], "memory/b.md": ["kubectl"]}
    entities, edges = extract(notes, named)
    assert [e.name for e in entities] == ["Ines Duarte", "Zanzibar", "kubectl"]
    assert ("Ines Duarte", "leads", "kubectl") in [(e.source, e.kind, e.target) for e in edges]
    assert [e.name for e in extract(notes)[0]] == ["Ines Duarte"]


def test_the_offline_generator_names_nothing_and_says_so() -> None:
    found = generated_names([note("memory/a.md", "kubectl")], ExtractiveGenerator())
    assert (
        found.names == {}
        and found.source == "offline"
        and "offline extractor" in (found.note or "")
    )


def test_relations_by_verb_and_co_mention() -> None:
    _, edges = extract(
        [
            note("memory/a.md", "Noor reports to Farid.\nNoor and Farid had lunch."),
            note("memory/b.md", "later Noor and Farid again"),
        ]
    )
    assert [(e.source, e.kind, e.target, e.line) for e in edges] == [
        ("Noor", "reports_to", "Farid", 1),
        ("Noor", "mentioned_with", "Farid", 2),
        ("Noor", "mentioned_with", "Farid", 1),
    ]


def test_procedures_need_an_announcement_and_two_steps() -> None:
    text = (
        "## Release checklist\n\n1. Tag.\n   with the version\n2. Push.\n\n"
        "Groceries:\n1. Milk\n2. Eggs\n\n"
        "To reset the router:\n1. Unplug it.\n\n"
        "How to restore:\n1) Stop the app.\n2) Copy the backup.\n"
    )
    found = find_procedures([note("memory/x.md", text)])
    assert [(p.slug, p.steps, p.sources[0].start_line, p.sources[0].end_line) for p in found] == [
        ("how-to-restore", ("1) Stop the app.", "2) Copy the backup."), 14, 16),
        ("release-checklist", ("1. Tag.", "   with the version", "2. Push."), 1, 5),
    ]


def test_the_same_steps_in_two_notes_make_one_procedure() -> None:
    text = "Steps to ship:\n1. Build.\n2. Ship.\n"
    found = find_procedures([note("memory/a.md", text), note("memory/b.md", text)])
    assert len(found) == 1 and [s.path for s in found[0].sources] == ["memory/a.md", "memory/b.md"]


def test_generated_pages_are_recognised_only_where_reflection_writes() -> None:
    page = front_matter({"kind": "entity"}) + "body"
    assert is_generated("memory/graph/entities/x.md", page)
    assert not is_generated("memory/2026-01-01.md", page)
    assert not is_generated("memory/graph/entities/x.md", "# hand written")


_USER = st.text(st.characters(blacklist_categories=("Cs",)), max_size=80).filter(
    lambda t: BEGIN not in t and END not in t and not t.startswith("---")
)


@given(body=st.text(max_size=40), other=st.text(max_size=40), above=_USER, below=_USER)
def test_merge_keeps_the_users_text_and_is_idempotent(
    body: str, other: str, above: str, below: str
) -> None:
    head = front_matter({"kind": "entity", "name": "A: b"})
    first = merge(None, head, body)
    assert first is not None
    text, start, end = first
    lines = text.split("\n")
    assert lines[start - 1] == BEGIN and lines[end - 1] == END
    assert merge(text, head, body) == (text, start, end)
    edited = text.replace(BEGIN, above + BEGIN, 1) + below
    again = merge(edited, head, other)
    assert again is not None
    new = again[0]
    assert new.startswith(head + above + BEGIN) and new.endswith(END + "\n" + below)
    assert merge(new, head, other) == again


def test_a_page_without_markers_is_not_merged() -> None:
    assert merge("my own page\n", front_matter({}), "body") is None
