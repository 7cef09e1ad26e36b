"""The ``[backends.builtin]`` section."""

from typing import Literal

from memwell.plugin import Record


class BuiltinConfig(Record, forbid_unknown_fields=True):
    """Options of the builtin backend.

    ``vector_engine``: ``"auto"`` (an in-memory numpy matrix: the fastest exact search at
    agent scale), ``"numpy"`` or ``"sqlite-vec"`` (KNN in SQL, nothing held in memory).
    """

    vector_engine: Literal["auto", "numpy", "sqlite-vec"] = "auto"
