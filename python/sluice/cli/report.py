"""`sluice report`: merge a job's logs and show what it did to the file system."""

from __future__ import annotations

from pathlib import Path

import click

from sluice.cli.output import text_width
from sluice.errors import UserError
from sluice.report.model import load_job, process_rows, task_rows
from sluice.report.text import render, render_decisions, render_tasks


@click.command()
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object with job and per-file totals.")
@click.option("--html", "html", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Also write a self-contained HTML page with plots.")
@click.option("--job", default=None, help="Report this job when the logs hold several (default: the latest).")
@click.option("--top", default=10, show_default=True, help="Files listed in the top-N tables.")
@click.option("--per-process", is_flag=True,
              help="With --json: a row per process under \"per_process\" (rank, pid, host, run time, and per module "
                   "its counter totals by Darshan's names).")
@click.option("--by-task", is_flag=True, help="A `sluice farm` job: one row per task (--job JOB/N reports one task).")
@click.option("--fs", "fs_profile", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="A calibrated profile (sluice bench calibrate): each staged file's first-write decision beside "
                   "what the profile predicted for it.")
@click.argument("logs", nargs=-1, required=True, type=click.Path(path_type=Path))
def command(as_json: bool, html: Path | None, job: str | None, top: int, per_process: bool, by_task: bool,
            fs_profile: Path | None, logs: tuple[Path, ...]) -> None:
    """Merge the logs of a job (files or directories of .sluice logs, or Darshan logs)."""
    if per_process and not as_json:
        raise UserError("--per-process adds rows to the JSON: use it with --json")
    model = None
    if fs_profile is not None:
        from sluice.autolarge import auto_large_of, read_profile

        model = auto_large_of(read_profile(fs_profile))
        if model is None:
            raise UserError(f"{fs_profile} holds no timings of staged against direct writes (made by an older "
                            "sluice bench calibrate)")
    j = load_job(list(logs), job)
    decisions = None
    if model is not None:
        from sluice.report.decisions import decision_rows

        decisions = decision_rows(j, model, top)
    if html is not None:
        from sluice.report.html import write_html

        try:
            write_html(j, html, top=max(top, 20))
        except OSError as e:
            raise UserError(f"cannot write {html}: {e.strerror}") from None
    tasks = task_rows(j) if by_task else []
    if by_task and not tasks:
        raise UserError(f"job {j.job_id} is not a sluice farm job (its logs have no task numbers)")
    if as_json:
        extra = {"tasks": tasks} if by_task else {}
        if per_process:
            extra["per_process"] = process_rows(j)
        if decisions is not None:
            extra["first_write_decisions"] = {"mount": model.mount, "large": model.large, "files": decisions}
        j.write_json(click.get_text_stream("stdout"), extra)
    else:
        width = text_width()
        click.echo(render(j, top=top, width=width), nl=False)
        if by_task:
            click.echo(render_tasks(tasks, width=width), nl=False)
        if decisions is not None:
            click.echo(render_decisions(decisions, model, width=width), nl=False)
        if html is not None:
            click.echo(f"HTML report: {html}")
