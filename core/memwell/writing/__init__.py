"""The write side of memory: one writer in core that every backend gets.

:class:`MemoryWriter` appends notes (to today's ``memory/YYYY-MM-DD.md``, a topic file, or a
``MEMORY.md`` section), creates topic files, replaces one exact passage and lists recent
activity, under the read path's containment rules, atomically, under a cross-process lock,
with secrets redacted, and syncs the index before it returns. :func:`writer` builds one for
an opened memory.
"""

from __future__ import annotations

from memwell.writing.results import RecentFile, WriteResult
from memwell.writing.writer import MemoryWriter, writer

__all__ = ["MemoryWriter", "RecentFile", "WriteResult", "writer"]
