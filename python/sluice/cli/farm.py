"""`sluice farm`: run an ensemble of serial tasks, each under sluice."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import click

from sluice.errors import UserError
from sluice.farm import inputs as farm_inputs
from sluice.farm import mpi as farm_mpi
from sluice.farm import summary as farm_summary
from sluice.farm.attempt import FarmSettings
from sluice.farm.dispatch import Dispatcher
from sluice.farm.engine import LocalSource, NodeLoop
from sluice.farm.journal import Journal
from sluice.farm.progress import Progress
from sluice.farm.taskdir import TaskDirs
from sluice.farm.tasks import Task, load
from sluice.farm.template import Template
from sluice.runner import job_id_from_env, new_job_id
from sluice.settings import MODES, RunSettings, load_config

FARM_MODES = (*MODES, "off")


def array_share(tasks: list[Task], env: dict[str, str] | None = None) -> tuple[list[Task], str]:
    """Under a Slurm job array, this element's share of the tasks (every
    COUNT-th, from its index), and the element's name; all tasks otherwise."""
    env = os.environ if env is None else env
    if not env.get("SLURM_ARRAY_TASK_ID", "").isdigit():
        return tasks, ""
    tid = int(env["SLURM_ARRAY_TASK_ID"])
    low = int(env.get("SLURM_ARRAY_TASK_MIN", "0") or 0)
    step = int(env.get("SLURM_ARRAY_TASK_STEP", "1") or 1)
    count = int(env.get("SLURM_ARRAY_TASK_COUNT", "1") or 1)
    index = (tid - low) // max(1, step)
    if not 0 <= index < count:
        raise UserError(f"job array element {tid} is outside the array ({low}.., step {step}, {count} elements)")
    return [t for t in tasks if (t.number - 1) % count == index], f"{env.get('SLURM_ARRAY_JOB_ID', '')}_{tid}"


@click.command(context_settings={"ignore_unknown_options": True, "allow_interspersed_args": False})
@click.option("--tasks", "-a", "task_file", metavar="FILE",
              help="One task per line ({1}, {2}... its fields), or a .csv (header row) or .toml ([[task]]) table; - reads stdin.")
@click.option("--grid", "grids", multiple=True, metavar="NAME=FROM:TO[:STEP]|A,B,..",
              help="A grid axis (repeatable): one task per point of the product, {NAME} its value.")
@click.option("-j", "--jobs", type=click.IntRange(1, 4096), default=None,
              help="Tasks at once on each node (default: one per core; under mpirun/srun, one per rank).")
@click.option("--mode", type=click.Choice(FARM_MODES), default="stage", show_default=True,
              help="sluice mode for every task (off: run the tasks without sluice).")
@click.option("--config", "config_file", default=lambda: os.environ.get("SLUICE_CONFIG"), metavar="FILE",
              help="TOML file with sluice settings for the tasks (docs/configuration.md).")
@click.option("--fs", "fs_profile", default=None, metavar="FS.json",
              help="A calibrated profile (sluice bench calibrate): in stage and auto mode a task's new file goes "
                   "straight through from the first-write size the profile found the tier no cheaper at, on that "
                   "file system (as sluice run --fs).")
@click.option("--path", "paths", multiple=True, metavar="PREFIX", help="Record and stage only paths under PREFIX.")
@click.option("--workdir", default="tasks/{#}", show_default=True, metavar="TEMPLATE",
              help="Each task's working directory (created; placeholders filled).")
@click.option("--input", "input_files", multiple=True, metavar="PATH",
              help="A shared read-only input copied once to each node; {input} or {input:NAME} is the copy.")
@click.option("--retries", type=click.IntRange(0, 100), default=1, show_default=True,
              help="Times a failed or killed task is run again (on another worker when one is free).")
@click.option("--journal", "journal_dir", default="sluice-farm.journal", show_default=True, metavar="DIR",
              help="Record of finished tasks; the same command run again skips them.")
@click.option("--log-dir", default=lambda: os.environ.get("SLUICE_LOG_DIR", "sluice-logs"),
              show_default="sluice-logs", help="Where the tasks' sluice logs go.")
@click.option("--local-dir", type=click.Path(path_type=Path), default=None,
              help="Node-local private directory for tiers and input copies [/dev/shm/sluice-farm-UID].")
@click.option("--schedule", type=click.Choice(["dynamic", "static"]), default="dynamic", show_default=True,
              help="dynamic: tasks go to whichever worker is free; static: task i to worker i mod W.")
@click.option("--grace", type=click.FloatRange(0), default=20.0, show_default=True, metavar="SECONDS",
              help="After SIGTERM, how long running tasks may go on before they get SIGTERM themselves.")
@click.option("--kill-after", type=click.FloatRange(0), default=5.0, show_default=True, metavar="SECONDS",
              help="Then how long before SIGKILL.")
@click.option("--engine", type=click.Choice(["auto", "local", "mpi"]), default="auto", show_default=True,
              help="auto: MPI when started by mpirun/srun with more than one rank, else local workers.")
@click.option("--job-id", default=None, help="Job identifier (default: the batch system's, else a new one).")
@click.option("--json", "json_file", default=None, metavar="FILE", help="Also write the summary as JSON.")
@click.option("-q", "--quiet", is_flag=True, help="No progress; only the summary.")
@click.argument("cmd", nargs=-1, type=click.UNPROCESSED, required=True)
def command(task_file, grids, jobs, mode, config_file, fs_profile, paths, workdir, input_files, retries, journal_dir, log_dir,
            local_dir, schedule, grace, kill_after, engine, job_id, json_file, quiet, cmd) -> None:
    """Run CMD once per task, each under sluice, on local workers or MPI ranks.

    \b
    sluice farm --tasks cells.txt -- ./ibis --cell {1} --years {2}
    sluice farm --grid lat=1:16 --grid lon=1:16 --input forcing.nc -- ./model {lat} {lon} {input}
    mpirun -np 64 sluice farm --tasks cells.txt -- ./ibis {}
    sbatch --array=0-15 --wrap "sluice farm --tasks cells.txt -- ./ibis {}"
    """
    cmd = list(cmd)
    ranks = farm_mpi.launched_ranks()
    use_mpi = engine == "mpi" or (engine == "auto" and ranks > 1)
    comm = farm_mpi.world() if use_mpi else None
    rank = comm.Get_rank() if comm is not None else 0
    nranks = comm.Get_size() if comm is not None else 1

    all_tasks = load(task_file, list(grids))
    tasks, element = array_share(all_tasks)
    if not tasks:
        click.echo(f"sluice farm: job array element {element} has no task (more elements than tasks)", err=True)
        sys.exit(0)
    input_names = {Path(p).name: "" for p in input_files}
    template = Template(cmd, workdir, input_names)
    template.check(all_tasks)
    settings = load_config(config_file) if config_file else RunSettings()
    settings.mode = mode
    if fs_profile and mode != "off":
        from sluice.cli.run import auto_large_by_profile
        auto_large_by_profile(settings, fs_profile, quiet or rank != 0)
    local = farm_inputs.open_local_dir(local_dir)
    template.inputs = farm_inputs.localize(list(input_files), local)
    job = job_id or job_id_from_env() or new_job_id()
    if comm is not None:
        job = comm.bcast(job, root=0)
    log_path = Path(log_dir).absolute()
    if mode != "off":
        try:
            log_path.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            raise UserError(f"cannot create the log directory {log_path}: {e.strerror}") from None
    slots = jobs or (1 if comm is not None else (os.cpu_count() or 1))
    farm = FarmSettings(job=job, template=template, tasks={t.number: t for t in all_tasks}, mode=mode,
                        log_dir=log_path, local_dir=local, sluice_extra=settings.env(),
                        paths=list(paths) or settings.paths, total=len(all_tasks), rank=rank)
    farm.sluice_extra.pop("SLUICE_MODE", None)

    if rank != 0:
        source = farm_mpi.WorkerSource(comm)
        NodeLoop(farm, source, slots, grace=grace, kill_after=kill_after).run()
        source.finish()
        sys.exit(0)

    journal = Journal(journal_dir)
    dirs = TaskDirs(template, all_tasks, journal,
                    protected=[os.getcwd(), journal.directory, log_path, local, *input_files])
    dispatcher = Dispatcher(tasks, template, journal, retries=retries, workers=slots * nranks,
                            static=schedule == "static", dirs=dirs)
    progress = Progress(dispatcher, enabled=not quiet)
    source = farm_mpi.CoordinatorSource(comm, dispatcher, slots) if comm is not None else LocalSource(dispatcher)
    try:
        stopped = NodeLoop(farm, source, slots, grace=grace, kill_after=kill_after, tick=progress.tick).run()
    finally:
        progress.close()
        journal.close()
    summary = farm_summary.build(dispatcher, farm, stopped)
    for line in farm_summary.text(summary):
        click.echo(line, err=True)
    if json_file:
        farm_summary.write_json(summary, json_file)
    c = summary["counts"]
    if stopped:
        sys.exit(128 + stopped)
    sys.exit(1 if c["failed"] or c["interrupted"] or c["not_run"] else 0)
