"""memwell's default ``builtin`` backend: SQLite + FTS5 + sqlite-vec."""
