"""The CLI's logging: records on stderr, each line starting with ``memwell: `` once."""

from __future__ import annotations

import logging
import sys


class _OnePrefix(logging.Formatter):
    """Log lines on stderr start with ``memwell: `` once (most messages carry it already, for
    applications that log memwell without this CLI)."""

    def format(self, record: logging.LogRecord) -> str:
        line = super().format(record)
        return line if line.startswith("memwell: ") else f"memwell: {line}"


def configure_logging(verbose: bool) -> None:
    """Send records at INFO (``verbose``) or WARNING and above to stderr."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(_OnePrefix())
    logging.basicConfig(level=logging.INFO if verbose else logging.WARNING, handlers=[handler])
