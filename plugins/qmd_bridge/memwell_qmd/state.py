"""The bridge's private qmd state under ``<workspace>/<index_dir>/qmd``.

qmd keeps its index in ``$XDG_CACHE_HOME/qmd/index.sqlite`` and its collections and models in
``$XDG_CONFIG_HOME/qmd/index.yml``; pointing both at this directory isolates one workspace's
qmd from every other qmd on the machine. ``managed.json`` records what the bridge owns.
"""

from __future__ import annotations

import json
import logging
import os
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from .errors import QmdConfigError

log = logging.getLogger(__name__)

_LOCAL_CONFIG_NAMES = ("index.yml", "index.yaml")


@dataclass(frozen=True)
class QmdCollectionEntry:
    """A collection as qmd's config records it."""

    path: str
    pattern: str


def _atomic_write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def find_local_qmd_config(start: Path) -> Path | None:
    """The first ``.qmd/index.y(a)ml`` in ``start`` or an ancestor (qmd would obey it)."""
    for directory in (start, *start.parents):
        for name in _LOCAL_CONFIG_NAMES:
            candidate = directory / ".qmd" / name
            if candidate.is_file():
                return candidate
    return None


@dataclass(frozen=True)
class QmdState:
    """Paths of one isolated qmd state directory, and access to the files in it."""

    root: Path

    @property
    def home(self) -> Path:
        return self.root / "home"

    @property
    def config_home(self) -> Path:
        return self.root / "config"

    @property
    def cache_home(self) -> Path:
        return self.root / "cache"

    @property
    def config_dir(self) -> Path:
        return self.config_home / "qmd"

    @property
    def index_yml(self) -> Path:
        return self.config_dir / "index.yml"

    @property
    def db_path(self) -> Path:
        return self.cache_home / "qmd" / "index.sqlite"

    @property
    def models_dir(self) -> Path:
        return self.cache_home / "qmd" / "models"

    @property
    def run_dir(self) -> Path:
        return self.root / "run"

    @property
    def manifest(self) -> Path:
        return self.root / "managed.json"

    def prepare(self, shared_models: Path | None) -> None:
        """Create the directories; link a shared models cache in if there is one."""
        for directory in (self.home, self.config_dir, self.models_dir.parent, self.run_dir):
            directory.mkdir(parents=True, exist_ok=True)
        if (
            shared_models is not None
            and shared_models.is_dir()
            and not os.path.lexists(self.models_dir)
        ):
            try:
                self.models_dir.symlink_to(shared_models, target_is_directory=True)
            except OSError as exc:
                log.debug("cannot link shared qmd models %s: %s", shared_models, exc)

    def working_dir(self) -> Path:
        """A cwd for qmd with no project-local ``.qmd`` config above it.

        qmd obeys a ``.qmd/index.yml`` found upward from its cwd, which would silently replace
        this isolated state; the bridge runs qmd from its own ``run`` directory, or from ``/``
        if that directory sits below such a config.
        """
        for candidate in (self.run_dir, Path("/")):
            if find_local_qmd_config(candidate) is None:
                return candidate
        found = find_local_qmd_config(Path("/"))
        raise QmdConfigError(f"a project-local qmd config at {found} would hijack the qmd index")

    def _load_config(self) -> dict[str, Any]:
        try:
            data = yaml.safe_load(self.index_yml.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return {}
        except (OSError, yaml.YAMLError) as exc:
            raise QmdConfigError(f"cannot read qmd config {self.index_yml}: {exc}") from exc
        return data if isinstance(data, dict) else {}

    def read_collections(self) -> dict[str, QmdCollectionEntry]:
        """qmd's collections (name -> path and pattern) from ``index.yml``."""
        found: dict[str, QmdCollectionEntry] = {}
        collections = self._load_config().get("collections")
        if not isinstance(collections, dict):
            return found
        for name, entry in collections.items():
            if isinstance(entry, dict) and isinstance(entry.get("path"), str):
                pattern = entry.get("pattern") or entry.get("mask") or "**/*.md"
                found[str(name)] = QmdCollectionEntry(path=entry["path"], pattern=str(pattern))
        return found

    def pin_models(self, models: Mapping[str, str], previously_pinned: set[str]) -> None:
        """Make ``index.yml``'s ``models`` block hold ``models``.

        qmd writes the models it resolved into that block on its first call and prefers it to
        the ``QMD_*_MODEL`` variables afterwards, so the bridge keeps it in step with its own
        configuration: roles it pinned earlier and no longer configures are dropped (qmd then
        falls back to its defaults), roles nobody configured are left as qmd wrote them.
        """
        data = self._load_config()
        block = data.get("models")
        current = dict(block) if isinstance(block, dict) else {}
        wanted = {k: v for k, v in current.items() if k not in previously_pinned}
        wanted.update(models)
        if wanted == current:
            return
        if wanted:
            data["models"] = wanted
        else:
            data.pop("models", None)
        _atomic_write(self.index_yml, yaml.safe_dump(data, sort_keys=False))

    def read_manifest(self) -> dict[str, Any]:
        """What the bridge recorded as its own (collections, pinned model roles)."""
        try:
            data = json.loads(self.manifest.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}
        return data if isinstance(data, dict) else {}

    def write_manifest(self, data: Mapping[str, Any]) -> None:
        _atomic_write(self.manifest, json.dumps(data, indent=2, sort_keys=True))
