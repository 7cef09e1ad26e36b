"""A click group whose subcommands are imported only when they run.

``memwell --help`` and a one-shot ``search`` should not pay for the MCP SDK, the evaluation
code or every plugin: each subcommand module registers itself with ``@cli.command`` when it
is imported, and the group imports it on first use. Plugin commands (the
``memwell_cli_commands`` hook) load only when a name is not a built-in or lazy command; the
command list shows them from a cache (:mod:`memwell.cli.plugin_commands`) when it is current.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable

import click

from memwell.cli import plugin_commands


class LazyGroup(click.Group):
    """A group with lazily imported subcommands and plugin commands loaded on demand."""

    def __init__(self, *args: object, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        self.lazy_commands: dict[str, tuple[str, str]] = {}
        self.plugin_loader: Callable[[click.Group], None] | None = None
        self._plugins_loaded = False

    def add_lazy_command(self, name: str, module: str, short_help: str) -> None:
        """Register ``name``: importing ``module`` adds it to this group (``@cli.command``)."""
        self.lazy_commands[name] = (module, short_help)

    def load_plugin_commands(self) -> None:
        """Let plugins add their commands (once)."""
        if not self._plugins_loaded and self.plugin_loader is not None:
            self._plugins_loaded = True
            self.plugin_loader(self)

    def _listed_plugin_commands(self) -> dict[str, str]:
        """Plugin commands for the help screen: cached, else loaded (and then cached)."""
        if self._plugins_loaded:
            return {}
        fingerprint = plugin_commands.plugin_fingerprint()
        cached = plugin_commands.cached_commands(fingerprint)
        if cached is not None:
            return {name: text for name, text in cached.items() if name not in self.commands}
        known = set(self.commands)
        self.load_plugin_commands()
        found = {
            name: command.get_short_help_str(80)
            for name, command in self.commands.items()
            if name not in known
        }
        plugin_commands.store_commands(fingerprint, found)
        return {}

    def list_commands(self, ctx: click.Context) -> list[str]:
        listed = self._listed_plugin_commands()
        return sorted({*self.commands, *self.lazy_commands, *listed})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name in self.commands:
            return self.commands[cmd_name]
        lazy = self.lazy_commands.get(cmd_name)
        if lazy is not None:
            importlib.import_module(lazy[0])
            return self.commands.get(cmd_name)
        self.load_plugin_commands()
        return self.commands.get(cmd_name)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """The command list, with registered or cached help lines (nothing imported)."""
        listed = self._listed_plugin_commands()
        rows = []
        for name in sorted({*self.commands, *self.lazy_commands, *listed}):
            lazy = self.lazy_commands.get(name) if name not in self.commands else None
            command = self.commands.get(name)
            if lazy is not None:
                rows.append((name, lazy[1]))
            elif name in listed:
                rows.append((name, listed[name]))
            elif command is not None and not command.hidden:
                rows.append((name, command.get_short_help_str(formatter.width - 6 - len(name))))
        if rows:
            with formatter.section("Commands"):
                formatter.write_dl(rows)
