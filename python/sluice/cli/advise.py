"""`sluice advise`: read a job's logs and say what to change, most costly first."""

from __future__ import annotations

import json
from pathlib import Path

import click

from sluice.advise import advise, to_json
from sluice.advise.text import render
from sluice.report.model import load_job


@click.command()
@click.option("--json", "as_json", is_flag=True,
              help='Print {"findings": [...]}: id, severity, paths, evidence, fix (mode, layout, settings), '
                   "expected_gain.")
@click.option("--job", default=None, help="Advise on this job when the logs hold several (default: the latest).")
@click.argument("logs", nargs=-1, required=True, type=click.Path(path_type=Path))
def command(as_json: bool, job: str | None, logs: tuple[Path, ...]) -> None:
    """Findings and fixes for a job (files or directories of .sluice logs, or Darshan logs).

    \b
    sluice advise sluice-logs/
    sluice advise --json sluice-logs/ > advice.json
    """
    j = load_job(list(logs), job)
    findings = advise(j)
    if as_json:
        click.echo(json.dumps(to_json(j, findings), indent=1))
    else:
        click.echo(render(j, findings), nl=False)
