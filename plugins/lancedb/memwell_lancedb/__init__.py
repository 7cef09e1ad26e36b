"""memwell's ``lancedb`` backend: Markdown memory and long-term memories in LanceDB."""

from __future__ import annotations
