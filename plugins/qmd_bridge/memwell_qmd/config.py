"""The ``[backends.qmd]`` configuration section, validated by :class:`QmdConfig`."""

import os
import shlex
from typing import Annotated, Literal

import msgspec
from memwell.plugin import Record, field_error

COMMAND_ENV = "MEMWELL_QMD_COMMAND"
SearchModeName = Literal["search", "vsearch", "query"]

BACKEND_NAME = "qmd"


def default_command() -> str:
    """``$MEMWELL_QMD_COMMAND`` if set (a shell-style string), else ``"qmd"`` on ``PATH``."""
    return os.environ.get(COMMAND_ENV, "").strip() or "qmd"


class QmdCollection(Record, forbid_unknown_fields=True, frozen=True, kw_only=True):  # type: ignore[misc]
    """An extra qmd collection: a directory (relative to the workspace, ``~`` allowed).

    ``name`` defaults to the directory's name; names are sanitised and made unique.
    """

    path: Annotated[str, msgspec.Meta(min_length=1)]
    name: str | None = None
    pattern: Annotated[str, msgspec.Meta(min_length=1)] = "**/*.md"


class QmdTimeouts(Record, forbid_unknown_fields=True, frozen=True, kw_only=True):  # type: ignore[misc]
    """Seconds before a qmd call's whole process group is killed.

    ``startup`` bounds the whole start-up (``qmd --version`` and collection setup) that
    ``open_memory`` waits for; past it the builtin fallback serves and the error says why.
    """

    startup: Annotated[float, msgspec.Meta(gt=0)] = 10.0
    search: Annotated[float, msgspec.Meta(gt=0)] = 4.0
    collection: Annotated[float, msgspec.Meta(gt=0)] = 30.0
    update: Annotated[float, msgspec.Meta(gt=0)] = 120.0
    embed: Annotated[float, msgspec.Meta(gt=0)] = 120.0


class QmdModels(Record, forbid_unknown_fields=True, frozen=True, kw_only=True):  # type: ignore[misc]
    """GGUF models: a local path (relative to the workspace) or a ``hf:user/repo/file`` URI.

    Each one set is passed as ``QMD_<ROLE>_MODEL`` and pinned in the ``models`` block of qmd's
    ``index.yml``; unset ones use qmd's defaults (downloaded from HuggingFace on first use).
    """

    embed: str | None = None
    generate: str | None = None
    rerank: str | None = None


class QmdConfig(Record, forbid_unknown_fields=True, frozen=True, kw_only=True):  # type: ignore[misc]
    """Settings of the ``qmd`` backend (``[backends.qmd]`` in ``memwell.toml``).

    ``command`` is an argv list or a shell-style string; a relative path in it is taken
    relative to the workspace. ``search_mode`` picks BM25 ``search``, vector ``vsearch`` or the
    full ``query`` pipeline (expansion, BM25 + vectors, rerank). Model-backed modes fall back
    to ``search`` while their models are unavailable or after they fail.
    """

    command: list[str] | str = msgspec.field(default_factory=default_command)
    search_mode: SearchModeName = "search"
    include_default_memory: bool = True
    collections: list[QmdCollection] = msgspec.field(default_factory=list)
    timeouts: QmdTimeouts = msgspec.field(default_factory=QmdTimeouts)
    update_on_boot: bool = True
    wait_for_boot_sync: bool = False
    update_interval_minutes: Annotated[float, msgspec.Meta(ge=0)] = 5.0
    embed_interval_minutes: Annotated[float, msgspec.Meta(ge=0)] = 60.0
    debounce_seconds: Annotated[float, msgspec.Meta(ge=0)] = 15.0
    max_output_bytes: Annotated[int, msgspec.Meta(ge=1024)] = 200_000
    max_snippet_chars: Annotated[int, msgspec.Meta(ge=1)] = 700
    max_injected_chars: Annotated[int, msgspec.Meta(ge=1)] = 4000
    models: QmdModels = msgspec.field(default_factory=QmdModels)
    allow_model_downloads: bool = False
    force_cpu: bool = False

    def __post_init__(self) -> None:
        try:
            argv = command_argv(self.command)
        except ValueError as exc:  # shlex: an unbalanced quote
            raise field_error("command", str(exc)) from None
        if not argv:
            raise field_error("command", "must not be empty")

    @property
    def argv(self) -> list[str]:
        """``command`` as an argv list."""
        return command_argv(self.command)


def command_argv(command: list[str] | str) -> list[str]:
    """Split a shell-style command string; a list is taken as is (blank items dropped)."""
    if isinstance(command, str):
        return shlex.split(command)
    return [part for part in command if part.strip()]
