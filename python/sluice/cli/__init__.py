"""Command-line entry point: ``sluice <verb>``.

Each verb lives in its own module and exposes a click command named
``command``. Verbs are registered here, explicitly, in workflow order.
A :class:`sluice.errors.UserError` becomes one line on stderr and exit 1;
a reader that stops reading (``sluice export ... | head``) ends the verb
quietly, with the status of a process that SIGPIPE ended.

`sluice run` with plain arguments is parsed without click
(:func:`sluice.cli.run.quick_parse`): it starts before every process of a
job, and click alone takes longer to load than the rest of it. Help,
errors and every other verb go through click.
"""

from __future__ import annotations

import functools
import importlib
import sys

from sluice.cli.output import reader_gone
from sluice.errors import UserError

# Workflow order: what a user does first comes first in --help.
VERBS = [
    "run", "farm", "status", "wait", "drain", "recover", "report", "advise", "predict", "export", "demo", "testbed",
    "bench",
]

DESCRIPTION = ("sluice: run a program unchanged, see what it does to the file system, and cut it "
               "(buffer, stage and acb modes).")


@functools.cache
def _cli():
    """The click group of every verb."""
    import click

    from sluice import __version__

    class Group(click.Group):
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

    @click.command(cls=Group, help=DESCRIPTION, context_settings={"help_option_names": ["-h", "--help"]})
    @click.version_option(__version__, prog_name="sluice")
    def cli() -> None:
        pass

    return cli


def __getattr__(name: str) -> object:
    if name == "cli":   # the group, made on first use
        return _cli()
    raise AttributeError(name)


def main(argv: list[str] | None = None) -> None:
    args = list(sys.argv[1:] if argv is None else argv)
    if args[:1] == ["run"]:
        _quick_run(args[1:])   # returns only when click is to parse them
    import click

    try:
        rc = _cli().main(args=args, prog_name="sluice", standalone_mode=False)
    except UserError as e:
        _user_error(e)
    except click.exceptions.Abort:
        click.echo("sluice: aborted", err=True)
        sys.exit(130)
    except click.ClickException as e:
        click.echo(f"sluice: error: {e.format_message()}", err=True)
        sys.exit(e.exit_code)
    sys.exit(rc if isinstance(rc, int) else 0)


def _quick_run(args: list[str]) -> None:
    from sluice.cli import run

    try:
        options = run.quick_parse(args)
        if options is not None:
            sys.exit(run.run_from_options(**options))   # type: ignore[arg-type]
    except UserError as e:
        _user_error(e)
    except KeyboardInterrupt:
        print("\nsluice: aborted", file=sys.stderr)
        sys.exit(130)


def _user_error(e: UserError) -> None:
    print(f"sluice: error: {e}", file=sys.stderr)
    sys.exit(1)
