"""The ``[backends.qmd]`` configuration section, validated by :class:`QmdConfig`."""

from __future__ import annotations

import os
import shlex
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

COMMAND_ENV = "MEMWELL_QMD_COMMAND"
SearchModeName = Literal["search", "vsearch", "query"]

BACKEND_NAME = "qmd"


def default_command() -> str:
    """``$MEMWELL_QMD_COMMAND`` if set (a shell-style string), else ``"qmd"`` on ``PATH``."""
    return os.environ.get(COMMAND_ENV, "").strip() or "qmd"


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class QmdCollection(_Strict):
    """An extra qmd collection: a directory (relative to the workspace, ``~`` allowed).

    ``name`` defaults to the directory's name; names are sanitised and made unique.
    """

    path: str = Field(min_length=1)
    name: str | None = None
    pattern: str = Field("**/*.md", min_length=1)


class QmdTimeouts(_Strict):
    """Seconds before a qmd call's whole process group is killed.

    ``startup`` bounds the whole start-up (``qmd --version`` and collection setup) that
    ``open_memory`` waits for; past it the builtin fallback serves and the error says why.
    """

    startup: float = Field(10.0, gt=0)
    search: float = Field(4.0, gt=0)
    collection: float = Field(30.0, gt=0)
    update: float = Field(120.0, gt=0)
    embed: float = Field(120.0, gt=0)


class QmdModels(_Strict):
    """GGUF models: a local path (relative to the workspace) or a ``hf:user/repo/file`` URI.

    Each one set is passed as ``QMD_<ROLE>_MODEL`` and pinned in the ``models`` block of qmd's
    ``index.yml``; unset ones use qmd's defaults (downloaded from HuggingFace on first use).
    """

    embed: str | None = None
    generate: str | None = None
    rerank: str | None = None


class QmdConfig(_Strict):
    """Settings of the ``qmd`` backend (``[backends.qmd]`` in ``memwell.toml``).

    ``command`` is an argv list or a shell-style string; a relative path in it is taken
    relative to the workspace. ``search_mode`` picks BM25 ``search``, vector ``vsearch`` or the
    full ``query`` pipeline (expansion, BM25 + vectors, rerank). Model-backed modes fall back
    to ``search`` while their models are unavailable or after they fail.
    """

    command: list[str] | str = Field(default_factory=default_command)
    search_mode: SearchModeName = "search"
    include_default_memory: bool = True
    collections: list[QmdCollection] = Field(default_factory=list)
    timeouts: QmdTimeouts = Field(default_factory=QmdTimeouts)
    update_on_boot: bool = True
    wait_for_boot_sync: bool = False
    update_interval_minutes: float = Field(5.0, ge=0)
    embed_interval_minutes: float = Field(60.0, ge=0)
    debounce_seconds: float = Field(15.0, ge=0)
    max_output_bytes: int = Field(200_000, ge=1024)
    max_snippet_chars: int = Field(700, ge=1)
    max_injected_chars: int = Field(4000, ge=1)
    models: QmdModels = Field(default_factory=QmdModels)
    allow_model_downloads: bool = False
    force_cpu: bool = False

    @field_validator("command")
    @classmethod
    def _non_empty_command(cls, value: list[str] | str) -> list[str] | str:
        if not command_argv(value):
            raise ValueError("command must not be empty")
        return value

    @property
    def argv(self) -> list[str]:
        """``command`` as an argv list."""
        return command_argv(self.command)


def command_argv(command: list[str] | str) -> list[str]:
    """Split a shell-style command string; a list is taken as is (blank items dropped)."""
    if isinstance(command, str):
        return shlex.split(command)
    return [part for part in command if part.strip()]
