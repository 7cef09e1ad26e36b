"""The ``[backends.jsonfile]`` section of ``memwell.toml``."""

from __future__ import annotations

from memwell.plugin import Record


class JsonFileConfig(Record, forbid_unknown_fields=True):
    """Options of the ``jsonfile`` backend.

    ``path``: where the index is written, relative to the workspace or absolute; by default
    ``<index_dir>/jsonfile-index.json`` (``index_dir`` is ``.memwell`` unless configured).
    ``indent``: pretty-print the JSON with this many spaces (handy to look inside it).
    """

    path: str | None = None
    indent: int | None = None
