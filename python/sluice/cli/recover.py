"""`sluice recover`: after a crash, publish every byte staged on the tier."""

from __future__ import annotations

from pathlib import Path

import click

from sluice.cli import drain
from sluice.cli.status import tier_option
from sluice.errors import UserError


@click.command()
@click.argument("tier", required=False, type=click.Path(path_type=Path))
@tier_option
@click.option("--jobs", "-j", type=click.IntRange(1, 256), default=4, show_default=True,
              help="Files published at the same time.")
def command(tier: Path | None, tier_dir: Path | None, jobs: int) -> int:
    """Publish what crashed or killed processes left on TIER (default: this user's tier).

    Idempotent, and safe to run twice or at the same time on one node: each
    entry is published under its lock. Exit status 1 if anything could not be
    published (it stays on the tier; see `sluice status`).
    """
    if tier is not None and tier_dir is not None and tier != tier_dir:
        raise UserError("give the tier once (TIER or --tier)")
    return drain.run(tier or tier_dir, jobs=jobs, force=False)
