"""The ``[backends.postgres]`` section of ``memwell.toml``."""

import hashlib
import socket
from pathlib import Path
from typing import Annotated, Literal

import msgspec
from memwell.plugin import Record, field_error


class PostgresConfig(Record, forbid_unknown_fields=True):
    """Options of the ``postgres`` backend.

    ``dsn``: a libpq connection string or URI (``postgresql://user@host:5432/db``); required.
    ``namespace``: which memory in the database this workspace is; by default derived from the
    workspace path (hosts sharing one memory must set the same value). ``schema_name``: the
    Postgres schema holding memwell's tables. ``host_id``: who this writer is (default the
    hostname and a digest of the workspace path, so two checkouts on one machine are two
    writers); with ``delete_missing = "own"`` a host removes from the index only files it
    indexed itself, so a stale or partial checkout never deletes another host's files.
    ``pool_min_size``/``pool_max_size``: connections kept open; ``connect_timeout``: seconds
    before an unreachable server is reported. ``ef_search``: HNSW search breadth (raised to
    the candidate count when that is larger). ``exact_search_below``: a memory of fewer chunks
    is searched exactly, as the builtin backend searches, instead of through HNSW (whose
    results are approximate). ``hnsw_m``/``hnsw_ef_construction``: the HNSW
    build parameters; ``maintenance_work_mem``: the server memory a full rebuild's index builds
    may use (e.g. ``"1GB"``; default the server's setting), much faster when the HNSW graph
    fits (the sync's notes say when it did not); ``max_parallel_maintenance_workers``: the
    workers those builds may add to their own process (default the server's setting).
    """

    dsn: str | None = None
    namespace: Annotated[str, msgspec.Meta(min_length=1, max_length=200)] | None = None
    schema_name: Annotated[str, msgspec.Meta(pattern=r"^[a-z_][a-z0-9_]{0,62}$")] = "memwell"
    host_id: Annotated[str, msgspec.Meta(min_length=1, max_length=200)] | None = None
    delete_missing: Literal["own", "any"] = "own"
    pool_min_size: Annotated[int, msgspec.Meta(ge=0, le=64)] = 1
    pool_max_size: Annotated[int, msgspec.Meta(ge=2, le=256)] = 4
    connect_timeout: Annotated[float, msgspec.Meta(gt=0, le=300)] = 5.0
    ef_search: Annotated[int, msgspec.Meta(ge=10, le=1000)] = 100
    exact_search_below: Annotated[int, msgspec.Meta(ge=0)] = 20_000
    hnsw_m: Annotated[int, msgspec.Meta(ge=2, le=100)] = 16
    hnsw_ef_construction: Annotated[int, msgspec.Meta(ge=4, le=1000)] = 64
    maintenance_work_mem: Annotated[str, msgspec.Meta(pattern=r"^[0-9]+ ?(kB|MB|GB)$")] | None = (
        None
    )
    max_parallel_maintenance_workers: Annotated[int, msgspec.Meta(ge=0, le=64)] | None = None

    def __post_init__(self) -> None:
        if self.hnsw_ef_construction < 2 * self.hnsw_m:
            raise field_error(
                "hnsw_ef_construction", "must be at least 2 * hnsw_m (pgvector's rule)"
            )

    def namespace_for(self, workspace: Path) -> str:
        """The configured namespace, else ``<dir name>-<12 hex of the resolved path>``."""
        if self.namespace:
            return self.namespace
        return f"{workspace.resolve().name or 'root'}-{_path_digest(workspace)[:12]}"

    def host(self, workspace: Path) -> str:
        """``host_id``, else ``<hostname>:<8 hex of the workspace path>``."""
        return self.host_id or f"{socket.gethostname()}:{_path_digest(workspace)[:8]}"


def writer_of(workspace: Path) -> str:
    """Which checkout wrote a file's row, whatever ``host_id`` says: the hostname and a
    digest of the workspace path. A row another writer indexed is never replaced by an
    older local copy."""
    return f"{socket.gethostname()}:{_path_digest(workspace)}"


def _path_digest(workspace: Path) -> str:
    return hashlib.sha256(str(workspace.resolve()).encode()).hexdigest()[:16]
