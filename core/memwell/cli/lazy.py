"""A click group whose subcommands are imported only when they run.

``memwell --help`` and a one-shot ``search`` should not pay for the MCP SDK, the evaluation
code or every plugin: each subcommand module registers itself with ``@cli.command`` when it
is imported, and the group imports it on first use. Plugin commands (the
``memwell_cli_commands`` hook) load only when a name is not a built-in or lazy command, or
when the command list is shown.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable

import click


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

    def list_commands(self, ctx: click.Context) -> list[str]:
        self.load_plugin_commands()
        return sorted({*self.commands, *self.lazy_commands})

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
        """The command list, with lazy commands' registered help lines (nothing imported)."""
        rows = []
        for name in self.list_commands(ctx):
            lazy = self.lazy_commands.get(name) if name not in self.commands else None
            command = self.commands.get(name)
            if lazy is not None:
                rows.append((name, lazy[1]))
            elif command is not None and not command.hidden:
                rows.append((name, command.get_short_help_str(formatter.width - 6 - len(name))))
        if rows:
            with formatter.section("Commands"):
                formatter.write_dl(rows)
