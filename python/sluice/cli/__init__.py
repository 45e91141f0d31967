"""Command-line entry point: ``sluice <verb>``.

Each verb lives in its own module and exposes a click command named
``command``. Verbs are registered here, explicitly, in workflow order.
A :class:`sluice.errors.UserError` becomes one line on stderr and exit 1;
a reader that stops reading (``sluice export ... | head``) ends the verb
quietly, with the status of a process that SIGPIPE ended.
"""

from __future__ import annotations

import importlib
import sys

import click

from sluice import __version__
from sluice.cli.output import reader_gone
from sluice.errors import UserError

# Workflow order: what a user does first comes first in --help.
VERBS = [
    "run", "farm", "status", "wait", "drain", "recover", "report", "advise", "export", "demo", "testbed", "bench",
]


class _Group(click.Group):
    def list_commands(self, ctx: click.Context) -> list[str]:
        return [v for v in VERBS if self.get_command(ctx, v) is not None]

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        if name not in VERBS:
            return None
        try:
            module = importlib.import_module(f"sluice.cli.{name}")
        except ModuleNotFoundError as e:
            if e.name == f"sluice.cli.{name}":
                return None
            raise
        return module.command

    def invoke(self, ctx: click.Context) -> object:
        try:
            return super().invoke(ctx)
        except BrokenPipeError:
            reader_gone()


@click.command(cls=_Group, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="sluice")
def cli() -> None:
    """sluice: run a program unchanged, see what it does to the file system, and cut it (buffer, stage and acb modes)."""


def main(argv: list[str] | None = None) -> None:
    try:
        rc = cli.main(args=argv, prog_name="sluice", standalone_mode=False)
    except UserError as e:
        click.echo(f"sluice: error: {e}", err=True)
        sys.exit(1)
    except click.exceptions.Abort:
        click.echo("sluice: aborted", err=True)
        sys.exit(130)
    except click.ClickException as e:
        click.echo(f"sluice: error: {e.format_message()}", err=True)
        sys.exit(e.exit_code)
    sys.exit(rc if isinstance(rc, int) else 0)
