"""One-line stderr hints for states a person would otherwise not notice."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import click

if TYPE_CHECKING:
    from memwell.contract.models import MemoryStatus


def warn_if_empty(workspace: Path, status: MemoryStatus) -> None:
    """Say so when nothing is indexed: most often a wrong ``-w`` or an empty workspace."""
    if status.files == 0:
        click.echo(
            f"memwell: no memory files indexed in {workspace} (looked for MEMORY.md and "
            "memory/**/*.md); pass -w DIR for another workspace, or set extra_paths",
            err=True,
        )


def warn_keyword_only(status: MemoryStatus) -> None:
    """Say that semantic search is off, why, and how to turn it on (not when asked for)."""
    if status.search_mode != "fts-only" or status.requested_provider == "none":
        return
    if status.provider_fallback is not None:  # the ladder's last rung: the note line says why
        return
    reason = status.provider_unavailable_reason or "no embedding provider available"
    click.echo(
        f"memwell: semantic search is off ({reason}); results are keyword-only. To turn it "
        "on, install memwell-local (bash scripts/install.sh) or set 'provider' and its API key",
        err=True,
    )
