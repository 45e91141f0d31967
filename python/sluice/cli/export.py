"""`sluice export`: a job's logs as Darshan logs, or as per-process tables for notebooks."""

from __future__ import annotations

from pathlib import Path

import click

from sluice.errors import UserError
from sluice.report.model import load_logs, select_job


@click.command()
@click.option("--darshan", "as_darshan", is_flag=True,
              help="Write NAME.darshan (the application's view) and NAME.fs.darshan (what reached the file system).")
@click.option("--csv", "as_csv", is_flag=True,
              help="Write one CSV per module (POSIX.csv, STDIO.csv, MPI-IO.csv): a row per process, file and side, "
                   "with Darshan's counter names.")
@click.option("--parquet", "as_parquet", is_flag=True, help="The same tables as Parquet files (needs pyarrow).")
@click.option("-o", "--output", "out_dir", type=click.Path(file_okay=False, path_type=Path), required=True,
              help="Directory to write into (created if missing).")
@click.option("--job", default=None, help="Export this job when the logs hold several (default: the latest).")
@click.option("--per-rank", is_flag=True,
              help="Darshan logs: one record per rank for files every rank used, instead of Darshan's reduced "
                   "rank -1 record.")
@click.argument("logs", nargs=-1, required=True, type=click.Path(path_type=Path))
def command(as_darshan: bool, as_csv: bool, as_parquet: bool, out_dir: Path, job: str | None, per_rank: bool,
            logs: tuple[Path, ...]) -> None:
    """Export a job's sluice logs (files or directories of .sluice logs).

    \b
    sluice export --darshan sluice-logs/ -o darshan/
    sluice export --csv sluice-logs/ -o tables/
    """
    if not (as_darshan or as_csv or as_parquet):
        raise UserError("say what to export: --darshan, --csv or --parquet")
    job_id, job_logs = select_job(load_logs(list(logs), sluice_only=True), job)
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise UserError(f"cannot create {out_dir}: {e.strerror}") from None
    try:
        if as_darshan:
            from sluice.darshan.export import export_job

            ex = export_job(job_id, job_logs, out_dir, per_rank=per_rank)
            click.echo(f"{ex.app} ({ex.app_bytes:,} bytes, {ex.records:,} records: what the application asked)")
            click.echo(f"{ex.fs} ({ex.fs_bytes:,} bytes: what reached the file system)")
            if ex.left_out:
                click.echo(f"sluice: note: {ex.left_out} process(es) without an MPI rank left out "
                           "(the launcher or a script around the program)", err=True)
        for fmt in [f for f, on in (("csv", as_csv), ("parquet", as_parquet)) if on]:
            from sluice.darshan.table import write_tables

            for p in write_tables(job_id, job_logs, out_dir, fmt):
                click.echo(str(p))
    except BrokenPipeError:
        raise   # stdout's reader is gone, not the directory (the group ends the verb quietly)
    except OSError as e:
        raise UserError(f"cannot write into {out_dir}: {e.strerror or e}") from None
