"""`sluice demo`: run the built-in default workload under sluice and print its profile."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import click

from sluice.cli.output import next_steps, text_width
from sluice.cli.run import run
from sluice.errors import UserError
from sluice.paths import native
from sluice.report.model import load_job
from sluice.report.text import render


@click.command()
@click.option("--dir", "workdir", default="sluice-demo", show_default=True, type=click.Path(path_type=Path),
              help="Where the workload writes its files and logs (emptied first).")
@click.option("--steps", default=20, show_default=True, help="Time steps of the simulated run.")
@click.option("--html", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Also write the HTML report there.")
@click.option("--mode", type=click.Choice(["profile", "buffer", "stage"]), default="profile", show_default=True,
              help="Run the workload in this mode: the report then shows what reached the file system.")
def command(workdir: Path, steps: int, html: Path | None, mode: str) -> None:
    """Run a small simulation-like program (a few hundred small files, small
    reads and writes, stdio logging) under `sluice run`, then report on it."""
    sim = native("sluice-demo-sim", "bin")
    if workdir.exists():
        if not (workdir / ".sluice-demo").exists():
            raise UserError(f"{workdir} exists and was not made by sluice demo; choose another --dir")
        shutil.rmtree(workdir)
    workdir.mkdir(parents=True)
    (workdir / ".sluice-demo").touch()
    logs = workdir / "logs"
    shown_mode = "" if mode == "profile" else f"--mode {mode} "
    click.echo(f"$ sluice run {shown_mode}--log-dir {logs} -- sluice-demo-sim -d {workdir / 'data'} -s {steps}",
               err=True)
    extra = None
    if mode == "stage":
        # where `sluice run --mode stage` puts it: /dev/shm when it can (the
        # demo's own directory may be on a disk, where staging is slower)
        from sluice.stage import placement

        extra = {"SLUICE_TIER": placement.place(dict(os.environ), lambda line: click.echo(line, err=True))}
    rc = run([str(sim), "-d", str(workdir / "data"), "-s", str(steps)], mode=mode, log_dir=str(logs), quiet=True,
             extra_env=extra)
    if rc != 0:
        raise UserError(f"the demo workload failed with status {rc}")
    click.echo(f"$ sluice report {logs}", err=True)
    job = load_job([logs])
    if html is not None:
        from sluice.report.html import write_html

        write_html(job, html)
    click.echo(render(job, width=text_width()), nl=False)
    click.echo(next_steps(str(logs)), err=True)
