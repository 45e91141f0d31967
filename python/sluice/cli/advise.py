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
@click.option("--fs", "fs_profile", type=click.Path(exists=True, dir_okay=False, path_type=Path),
              help="A file system's profile (sluice bench calibrate) for the predicted I/O times.")
@click.argument("logs", nargs=-1, required=True, type=click.Path(path_type=Path))
def command(as_json: bool, job: str | None, fs_profile: Path | None, logs: tuple[Path, ...]) -> None:
    """Findings and fixes for a job (files or directories of .sluice logs, or Darshan logs).

    \b
    sluice advise sluice-logs/
    sluice advise --json sluice-logs/ > advice.json
    """
    j = load_job(list(logs), job)
    findings = advise(j)
    prediction = _prediction(j, fs_profile)
    auto_fs = _auto_profile(fs_profile)
    if as_json:
        doc = to_json(j, findings, auto_fs)
        if prediction:
            doc["prediction"] = prediction
        click.echo(json.dumps(doc, indent=1))
    else:
        click.echo(render(j, findings, auto_fs), nl=False)
        if prediction:
            from sluice.cli.predict import render as render_prediction
            click.echo("\nWhat each mode would send to the file system (sluice predict, docs/predict.md):")
            click.echo(render_prediction(prediction), nl=False)


def _auto_profile(fs_profile: Path | None) -> str | None:
    """The profile, for `sluice run --mode auto --fs`, when it holds auto's figures."""
    from sluice.autolarge import auto_large_of, read_profile

    return str(fs_profile) if fs_profile and auto_large_of(read_profile(fs_profile)) else None


def _prediction(j, fs_profile: Path | None) -> dict | None:
    """sluice predict's numbers for a profile-mode run of sluice's own logs
    (another mode's fs side, or Darshan's logs, say nothing it could use)."""
    from sluice import predict as pr
    from sluice.errors import UserError

    if not j.logs or any(getattr(l, "info", None) is None for l in j.logs):
        return None
    try:
        return pr.predict(j, pr.load(fs_profile))
    except UserError:
        if fs_profile:
            raise
        return None
