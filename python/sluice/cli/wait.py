"""`sluice wait`: block until staged files are published."""

from __future__ import annotations

import os
import time
from pathlib import Path

import click

from sluice.cli.status import tier_option
from sluice.errors import UserError
from sluice.stage.announce import remote_pending
from sluice.stage.scan import pending
from sluice.stage.tier import default_tier, open_tier


def run(tier_dir: Path | None, paths: list[str], timeout: float | None, poll: float,
        log_dir: str | None = None) -> None:
    """Return once nothing named is pending, on this node's tier nor, as the
    markers in `log_dir` say, on another node's; UserError on timeout."""
    root = tier_dir or default_tier()
    logs = log_dir or os.environ.get("SLUICE_LOG_DIR") or "sluice-logs"
    deadline = None if timeout is None else time.monotonic() + timeout
    warned: set[str] = set()
    while True:
        left = pending(open_tier(root), paths or None)
        remote, problems = remote_pending(logs, paths or None)
        for line in problems:
            if line not in warned:
                warned.add(line)
                click.echo(f"sluice wait: {line}", err=True)
        if not left and not remote:
            return
        if deadline is not None and time.monotonic() >= deadline:
            raise UserError(f"timed out after {timeout:g} s: " + "; ".join(_left_text(left, remote)))
        time.sleep(poll if deadline is None else max(0.0, min(poll, deadline - time.monotonic())))


def _left_text(left: list, remote: list) -> list[str]:
    def some(paths: list[str]) -> str:
        return ", ".join(paths[:3]) + (", ..." if len(paths) > 3 else "")

    parts = []
    if left:
        parts.append(f"{len(left)} file(s) not yet published ({some([l.entry.path for l in left if l.entry])})")
    for r in remote:
        parts.append(f"{len(r.paths)} file(s) still on {r.host}'s tier {r.tier} ({some(list(r.paths))}; "
                     f"sluice drain or sluice recover there publishes them)")
    return parts


@click.command()
@tier_option
@click.option("--timeout", type=click.FloatRange(min=0), default=None, metavar="S",
              help="Give up after S seconds (exit status 1) [wait forever].")
@click.option("--poll", type=click.FloatRange(min=0.01), default=0.2, show_default=True, metavar="S",
              help="Seconds between looks at the tier.")
@click.option("--log-dir", default=None, metavar="DIR",
              help="The job's log directory, where other nodes say what their tiers still hold "
                   "[$SLUICE_LOG_DIR, else sluice-logs].")
@click.argument("paths", nargs=-1, type=click.Path())
def command(tier_dir: Path | None, timeout: float | None, poll: float, log_dir: str | None,
            paths: tuple[str, ...]) -> None:
    """Block until PATHs (default: every staged file) are published.

    A path with no pending entry (published, or never staged) needs no wait.
    Entries that do not parse are not waited for (see `sluice status`).
    Files staged on other nodes are waited for as the job's log directory
    says (sluice run writes there what its node's tier still holds).
    """
    run(tier_dir, list(paths), timeout, poll, log_dir)
