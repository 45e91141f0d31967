"""`sluice wait`: block until staged files are published."""

from __future__ import annotations

import time
from pathlib import Path

import click

from sluice.cli.status import tier_option
from sluice.errors import UserError
from sluice.stage.scan import pending
from sluice.stage.tier import default_tier, open_tier


def run(tier_dir: Path | None, paths: list[str], timeout: float | None, poll: float) -> None:
    """Return once nothing named is pending; UserError on timeout."""
    root = tier_dir or default_tier()
    deadline = None if timeout is None else time.monotonic() + timeout
    while True:
        left = pending(open_tier(root), paths or None)
        if not left:
            return
        if deadline is not None and time.monotonic() >= deadline:
            shown = ", ".join(l.entry.path for l in left[:3] if l.entry) + (", ..." if len(left) > 3 else "")
            raise UserError(f"timed out after {timeout:g} s: {len(left)} file(s) not yet published ({shown})")
        time.sleep(poll if deadline is None else max(0.0, min(poll, deadline - time.monotonic())))


@click.command()
@tier_option
@click.option("--timeout", type=click.FloatRange(min=0), default=None, metavar="S",
              help="Give up after S seconds (exit status 1) [wait forever].")
@click.option("--poll", type=click.FloatRange(min=0.01), default=0.2, show_default=True, metavar="S",
              help="Seconds between looks at the tier.")
@click.argument("paths", nargs=-1, type=click.Path())
def command(tier_dir: Path | None, timeout: float | None, poll: float, paths: tuple[str, ...]) -> None:
    """Block until PATHs (default: every staged file) are published.

    A path with no pending entry (published, or never staged) needs no wait.
    Entries that do not parse are not waited for (see `sluice status`).
    """
    run(tier_dir, list(paths), timeout, poll)
