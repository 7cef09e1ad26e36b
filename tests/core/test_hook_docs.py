"""The plugin docs are tested: hook signatures, runnable examples and quoted source excerpts.

``docs/plugin-hooks.md`` must document every hookspec in :mod:`memwell.contract.hookspecs` under a
heading with its exact signature, ``### `name(arg, ...)` ``, and nothing that is not a
hookspec; every hook section has an example, and every example runs. Code quoted in
``docs/writing-a-plugin.md`` after a ``<!-- from: PATH -->`` marker must appear verbatim in PATH.
"""

from __future__ import annotations

import inspect
import re
from pathlib import Path

import pytest
from memwell.contract import hookspecs

ROOT = Path(__file__).resolve().parents[2]
HOOKS_DOC = ROOT / "docs" / "plugin-hooks.md"
WALKTHROUGH = ROOT / "docs" / "writing-a-plugin.md"

SIGNATURE_HEADING = re.compile(r"^### `(?P<signature>(?P<name>memwell_\w+)\(.*\))`$", re.MULTILINE)
PYTHON_BLOCK = re.compile(r"^```python\n(.*?)^```$", re.MULTILINE | re.DOTALL)
QUOTED_BLOCK = re.compile(r"^<!-- from: (\S+) -->\n```\w*\n(.*?)^```$", re.MULTILINE | re.DOTALL)


def spec_signatures() -> dict[str, str]:
    """``name -> "name(arg, ...)"`` for every hook specification."""
    signatures = {}
    for name, function in vars(hookspecs).items():
        if name.startswith("memwell_") and callable(function):
            assert hasattr(function, "memwell_spec"), f"{name} is not marked @hookspec"
            params = ", ".join(inspect.signature(function).parameters)
            signatures[name] = f"{name}({params})"
    return signatures


def documented_signatures(text: str) -> dict[str, str]:
    documented: dict[str, str] = {}
    for match in SIGNATURE_HEADING.finditer(text):
        assert match["name"] not in documented, f"{match['name']} is documented twice"
        documented[match["name"]] = match["signature"]
    return documented


def hook_sections(text: str) -> dict[str, str]:
    """The text under each hook heading, up to the next heading."""
    matches = list(SIGNATURE_HEADING.finditer(text))
    sections = {}
    for match in matches:
        rest = text[match.end() :]
        end = re.search(r"^#{2,3} ", rest, re.MULTILINE)
        sections[match["name"]] = rest[: end.start()] if end else rest
    return sections


def test_spec_signatures_are_found() -> None:
    signatures = spec_signatures()
    assert signatures["memwell_search_backends"] == "memwell_search_backends()"
    assert signatures["memwell_after_turn"] == (
        "memwell_after_turn(manager, messages, session_key, success)"
    )


def test_every_hookspec_is_documented_with_its_exact_signature() -> None:
    documented = documented_signatures(HOOKS_DOC.read_text(encoding="utf-8"))
    for name, signature in spec_signatures().items():
        assert name in documented, f"hookspec {name} is missing from {HOOKS_DOC.name}"
        assert documented[name] == signature, (
            f"{HOOKS_DOC.name} documents {documented[name]!r}, the hookspec is {signature!r}"
        )


def test_no_documented_hook_is_missing_from_the_specs() -> None:
    documented = documented_signatures(HOOKS_DOC.read_text(encoding="utf-8"))
    stale = sorted(set(documented) - set(spec_signatures()))
    assert not stale, f"{HOOKS_DOC.name} documents hooks that do not exist: {stale}"


def test_detection_catches_a_changed_signature() -> None:
    text = HOOKS_DOC.read_text(encoding="utf-8").replace(
        "### `memwell_before_answer(manager, prompt, session_key)`",
        "### `memwell_before_answer(manager, prompt)`",
    )
    assert (
        documented_signatures(text)["memwell_before_answer"]
        != (spec_signatures()["memwell_before_answer"])
    )


def test_every_hook_section_has_an_example() -> None:
    for name, section in hook_sections(HOOKS_DOC.read_text(encoding="utf-8")).items():
        assert PYTHON_BLOCK.search(section), f"{name} has no python example"


@pytest.mark.parametrize(
    "code",
    PYTHON_BLOCK.findall(HOOKS_DOC.read_text(encoding="utf-8")),
    ids=lambda code: code.split("\n", 1)[0][:40],
)
def test_hook_examples_run(code: str) -> None:
    exec(compile(code, str(HOOKS_DOC), "exec"), {"__name__": "plugin_hooks_example"})


def test_walkthrough_quotes_match_the_example_sources() -> None:
    quotes = QUOTED_BLOCK.findall(WALKTHROUGH.read_text(encoding="utf-8"))
    assert len(quotes) >= 5
    for rel, code in quotes:
        source = (ROOT / rel).read_text(encoding="utf-8")
        assert code in source, f"the excerpt of {rel} in {WALKTHROUGH.name} is out of date"
