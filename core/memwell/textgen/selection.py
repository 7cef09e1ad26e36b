"""Choosing the text generator from ``[textgen]``: ``none``, ``auto`` or a plugin's id.

- ``none`` (the default): the offline :class:`~memwell.textgen.extractive.ExtractiveGenerator`;
  nothing leaves the machine.
- ``auto``: generators with an ``auto_priority``, lowest first; one that raises
  :class:`~memwell.contract.errors.ProviderUnavailableError` (a remote generator without its key) is
  skipped, and when none can run the extractive generator is used, with the reasons in
  :attr:`TextGeneratorSelection.note`.
- an id: that generator, failing closed (unknown id: :class:`~memwell.contract.errors.ConfigError`;
no
  key: :class:`~memwell.contract.errors.ProviderUnavailableError`).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from memwell.contract.config import MemwellSettings, plugin_config
from memwell.contract.descriptors import ProviderContext, TextGeneratorSpec
from memwell.contract.errors import ConfigError, ProviderError, ProviderUnavailableError
from memwell.contract.text_generator import TextGenerator
from memwell.registry.plugins import PluginRegistry
from memwell.textgen.extractive import ExtractiveGenerator
from memwell.util.lazy_import import lazy_logger

log = lazy_logger(__name__)


@dataclass(frozen=True)
class TextGeneratorSelection:
    """The chosen generator, what was asked for, and why the extractive one is used (if so)."""

    generator: TextGenerator
    requested: str
    note: str | None = None

    @property
    def offline(self) -> bool:
        """True when the extractive generator was chosen."""
        return isinstance(self.generator, ExtractiveGenerator)


def _create(spec: TextGeneratorSpec, settings: MemwellSettings, workspace: Path) -> TextGenerator:
    section = settings.providers.get(spec.id)
    cfg = plugin_config(spec.config_model, section, f"providers.{spec.id}")
    model = settings.textgen.model.strip() or spec.default_model
    ctx = ProviderContext(workspace=workspace, settings=settings, model=model, plugin_config=cfg)
    try:
        return spec.create(ctx)
    except (ProviderError, ConfigError):
        raise
    except Exception as exc:  # a buggy plugin: name it, and let auto move on
        raise ProviderError(
            f"text generator {spec.id!r} failed to start: {type(exc).__name__}: {exc}",
            provider=spec.id,
        ) from exc


def select_text_generator(
    settings: MemwellSettings, registry: PluginRegistry, workspace: Path
) -> TextGeneratorSelection:
    """The generator ``settings.textgen.provider`` asks for (see the module docstring)."""
    requested = settings.textgen.provider
    if requested == "none":
        return TextGeneratorSelection(ExtractiveGenerator(), requested)
    if requested == "auto":
        reasons: list[str] = []
        for name in registry.auto_candidates("text generator"):
            spec = registry.text_generator(name)  # imports only this candidate's plugin
            if spec is None:
                continue
            try:
                return TextGeneratorSelection(_create(spec, settings, workspace), requested)
            except ProviderUnavailableError as exc:
                reasons.append(f"{spec.id}: {exc}")
            except ProviderError as exc:
                log.warning("memwell: skipping text generator %r: %s", spec.id, exc)
                reasons.append(f"{spec.id}: {exc}")
        note = "no text generator available, using the offline extractive one"
        if reasons:
            note += " (" + "; ".join(reasons) + ")"
        return TextGeneratorSelection(ExtractiveGenerator(), requested, note)
    chosen = registry.text_generator(requested)
    if chosen is None:
        installed = ", ".join(["none", "auto", *registry.text_generators])
        raise ConfigError(
            f"unknown text generator {requested!r} in config key 'textgen.provider' "
            f"(choose from: {installed})",
            key="textgen.provider",
        )
    return TextGeneratorSelection(_create(chosen, settings, workspace), requested)
