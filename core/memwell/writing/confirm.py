"""The text generator's check of an automatic supersession (``[write] supersede_confirm``).

The matching of :mod:`memwell.writing.facts` needs no model; when a user configures a text
generator and turns ``supersede_confirm`` on, each candidate is also put to the generator,
which answers yes or no. A generator that fails leaves the candidate as the matching found
it (logged); the offline extractive generator cannot judge, so it is never asked.
"""

from __future__ import annotations

from pathlib import Path

from memwell.contract.config import MemwellSettings
from memwell.contract.text_generator import TextGenerator
from memwell.registry.plugins import get_registry
from memwell.textgen.selection import select_text_generator
from memwell.util.lazy_import import lazy_logger
from memwell.writing.supersession import Confirm

log = lazy_logger(__name__)

SYSTEM = "You check a memory file for outdated facts. Answer with one word: yes or no."
PROMPT = (
    "Older note: {old}\n"
    "Newer note: {new}\n"
    "Does the newer note give a new value for exactly the same thing the older note states, "
    "so that the older note is now outdated?"
)


def text_generator_confirm(generator: TextGenerator) -> Confirm:
    """A :data:`~memwell.writing.supersession.Confirm` that asks ``generator``."""

    def confirm(old: str, new: str) -> bool:
        try:
            answer = generator.generate(
                PROMPT.format(old=old, new=new), max_tokens=4, system=SYSTEM
            )
        except Exception as exc:
            log.warning("memwell: %s could not confirm a supersession: %s", generator.id, exc)
            return True
        return answer.strip().lower().startswith("yes")

    return confirm


def configured_confirm(settings: MemwellSettings, workspace: Path) -> Confirm | None:
    """The confirmation of the ``[textgen]`` generator; ``None`` (logged) when none is
    configured or it cannot start."""
    try:
        selection = select_text_generator(settings, get_registry(), workspace)
    except Exception as exc:
        log.warning("memwell: supersessions are not confirmed: %s", exc)
        return None
    if selection.offline:
        log.warning(
            "memwell: [write] supersede_confirm is on, but no text generator is configured "
            "([textgen] provider); supersessions are not confirmed"
        )
        return None
    return text_generator_confirm(selection.generator)
