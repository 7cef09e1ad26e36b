"""``memwell plugin new``: scaffold a backend or provider plugin package."""

from __future__ import annotations

from pathlib import Path

import click

from memwell.cli.main import cli
from memwell.cli.scaffold import KINDS, scaffold_plugin


@cli.group()
def plugin() -> None:
    """Write memwell plugins."""


@plugin.command(name="new")
@click.argument("name")
@click.option("--kind", type=click.Choice(KINDS), required=True, help="What the plugin adds.")
@click.option(
    "--dir",
    "parent",
    type=click.Path(file_okay=False, path_type=Path),
    default=".",
    show_default=True,
    help="Folder to create memwell-NAME in.",
)
def new(name: str, kind: str, parent: Path) -> None:
    """Create the package memwell-NAME: entry point, plugin module, config, conformance test."""
    target = scaffold_plugin(name, kind, parent)
    click.echo(f"created {target}")
    click.echo(f"next: pip install -e '{target}[test]' && python -m pytest {target / 'tests'}")
