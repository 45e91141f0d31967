"""`sluice drain`: publish what detached or dead stage-mode processes left on the tier."""

from __future__ import annotations

from pathlib import Path

import click

from sluice.cli.status import human_bytes, tier_option
from sluice.stage import announce
from sluice.stage import publish as pub
from sluice.stage.publish import Outcome
from sluice.stage.tier import Tier, default_tier, open_tier


def run(tier_dir: Path | None = None, jobs: int = 4, force: bool = False) -> int:
    """Publish, print what happened; the exit status (1 if anything could not be published)."""
    root = tier_dir or default_tier()
    tier = open_tier(root)
    if tier is None:
        click.echo(f"nothing to publish: tier {root} does not exist")
        return 0
    outcomes = pub.drain(tier, jobs=jobs, force=force)
    for o in outcomes:
        _report(tier, o)
    announce.refresh(tier)  # the other nodes' `sluice wait` learns what was published
    click.echo(summary(tier, outcomes))
    return 1 if any(o.result in pub.PROBLEMS for o in outcomes) else 0


def _report(tier: Tier, o: Outcome) -> None:
    if o.result == pub.PUBLISHED:
        click.echo(f"published {o.path} ({human_bytes(o.bytes)})")
    elif o.result == pub.INCOMPLETE:
        click.echo(f"sluice: kept {o.path} ({human_bytes(o.bytes)}): its process died while writing it, "
                   "so it does not take its own name", err=True)
    elif o.result == pub.FAILED:
        click.echo(f"sluice: not published: {o.path}: {o.detail}; data kept in {tier.data(o.id)}", err=True)
    elif o.result == pub.CORRUPT:
        click.echo(f"sluice: bad journal entry {tier.journal(o.id)}: {o.detail}; left alone", err=True)


def summary(tier: Tier, outcomes: list[Outcome]) -> str:
    """One line: how many entries went which way."""
    if not outcomes:
        return f"tier {tier.root}: nothing to publish"
    published = [o for o in outcomes if o.result == pub.PUBLISHED]
    counts = [
        (len(published), f"published ({human_bytes(sum(o.bytes for o in published))})"),
        (_count(outcomes, pub.INCOMPLETE), f"incomplete (kept as NAME{pub.INCOMPLETE_SUFFIX})"),
        (_count(outcomes, pub.FINISHED), "already published, cleaned up"),
        (_count(outcomes, pub.RUNNING), "left to their running processes"),
        (_count(outcomes, pub.IN_USE), "in use by another process"),
        (_count(outcomes, pub.FAILED), "failed"),
        (_count(outcomes, pub.CORRUPT), "unreadable"),
    ]
    parts = [f"{n} {what}" for n, what in counts if n]
    return f"tier {tier.root}: " + (", ".join(parts) if parts else "nothing left to publish")


def _count(outcomes: list[Outcome], result: str) -> int:
    return sum(1 for o in outcomes if o.result == result)


@click.command()
@tier_option
@click.option("--jobs", "-j", type=click.IntRange(1, 256), default=4, show_default=True,
              help="Files published at the same time.")
@click.option("--force", is_flag=True,
              help="Also publish the entries of processes still running on this node.")
def command(tier_dir: Path | None, jobs: int, force: bool) -> int:
    """Publish every closed file whose process is gone or detached (and every open one whose process is gone)."""
    return run(tier_dir, jobs, force)
