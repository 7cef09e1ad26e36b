"""The ``[backends.lancedb]`` section and where the database lives."""

from datetime import timedelta
from pathlib import Path, PurePosixPath
from typing import Annotated, Any

import msgspec
from memwell.plugin import Record, field_error

#: Keys of ``storage_options`` that LanceDB Cloud (``db://``) takes as ``connect`` arguments.
CLOUD_CONNECT_KEYS = ("api_key", "region", "host_override")


class LanceConfig(Record, forbid_unknown_fields=True):
    """Options of the ``lancedb`` backend (unknown keys are an error).

    :param uri: a local directory or any URI LanceDB accepts (``s3://``, ``gs://``, ``az://``,
        ``db://`` for LanceDB Cloud); default ``<workspace>/<index_dir>/lancedb``.
    :param storage_options: passed to LanceDB as is (object-store credentials, endpoints);
        for ``db://`` URIs ``api_key``, ``region`` and ``host_override`` go to ``connect``.
    :param index_namespace: prefix of this workspace's index tables, so several workspaces
        can share one ``uri``; the ``memories`` table is always shared.
    :param read_consistency_seconds: how stale a read may be when other processes write;
        ``0`` checks for new versions on every read, ``None`` never does.
    :param auto_capture: store durable facts from user messages after each turn.
    :param auto_recall: prepend the best matching memories before the agent answers.
    :param capture_max_chars: longest user message auto-capture considers (100..10000).
    :param journal: also append every stored memory to a Markdown journal.
    :param journal_path: the journal, relative to the workspace.
    """

    uri: str | None = None
    storage_options: dict[str, str] = msgspec.field(default_factory=dict)
    index_namespace: Annotated[str, msgspec.Meta(pattern=r"^[A-Za-z0-9_]{0,64}$")] = ""
    read_consistency_seconds: Annotated[float, msgspec.Meta(ge=0.0)] | None = 0.0
    auto_capture: bool = False
    auto_recall: bool = True
    capture_max_chars: Annotated[int, msgspec.Meta(ge=100, le=10_000)] = 500
    journal: bool = True
    journal_path: str = "memory/captured.md"

    def __post_init__(self) -> None:
        path = PurePosixPath(self.journal_path.replace("\\", "/"))
        if path.is_absolute() or ".." in path.parts or not path.name.endswith(".md"):
            raise field_error(
                "journal_path", "must be a relative path to a .md file inside the workspace"
            )
        self.journal_path = path.as_posix()


def is_local_uri(uri: str) -> bool:
    """True for a plain path or ``file://`` URI (no object store or cloud scheme)."""
    return "://" not in uri or uri.startswith("file://")


def resolve_uri(config: LanceConfig, workspace: Path, index_dir: str) -> str:
    """The database URI: ``config.uri`` (``~`` and relative paths resolved), or the default."""
    if config.uri is None:
        return str(workspace / index_dir / "lancedb")
    if not is_local_uri(config.uri):
        return config.uri
    local = Path(config.uri.removeprefix("file://")).expanduser()
    return str(local if local.is_absolute() else workspace / local)


def connect_kwargs(config: LanceConfig, uri: str) -> dict[str, Any]:
    """Keyword arguments for ``lancedb.connect(uri, ...)``."""
    options = dict(config.storage_options)
    kwargs: dict[str, Any] = {}
    if uri.startswith("db://"):
        kwargs = {key: options.pop(key) for key in CLOUD_CONNECT_KEYS if key in options}
    if options:
        kwargs["storage_options"] = options
    seconds = config.read_consistency_seconds
    if seconds is not None:
        kwargs["read_consistency_interval"] = timedelta(seconds=seconds)
    return kwargs
