"""The Markdown index: :class:`DocumentIndex`, the files and chunks tables of
:mod:`~memwell_lancedb.index_tables`, written by :mod:`~memwell_lancedb.indexing` and searched
by :mod:`~memwell_lancedb.searching`."""

from __future__ import annotations

from .indexing import IndexWriting
from .searching import IndexSearching


class DocumentIndex(IndexWriting, IndexSearching):
    """The workspace's Markdown (and session transcripts) in two LanceDB tables, kept in sync
    by content hash and searched by keyword, vector or both."""
