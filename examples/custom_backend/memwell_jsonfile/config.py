"""The ``[backends.jsonfile]`` section of ``memwell.toml``."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class JsonFileConfig(BaseModel):
    """Options of the ``jsonfile`` backend.

    ``path``: where the index is written, relative to the workspace or absolute; by default
    ``<index_dir>/jsonfile-index.json`` (``index_dir`` is ``.memwell`` unless configured).
    ``indent``: pretty-print the JSON with this many spaces (handy to look inside it).
    """

    model_config = ConfigDict(extra="forbid")

    path: str | None = None
    indent: int | None = None
