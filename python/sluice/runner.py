"""Running a command under libsluice: the environment it needs and the job it belongs to.

Pure functions, so that `sluice run`, `sluice demo` and the benchmark harness
build the environment the same way.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

from sluice.paths import preload_library

from sluice.settings import MODES  # noqa: F401  (re-exported)

# Where MPI launchers and batch systems say which job a process belongs to;
# the library reads the same variables, in the same order, when
# SLUICE_JOB_ID is not set.
_JOB_ENV = ("PMIX_NAMESPACE", "OMPI_MCA_ess_base_jobid", "PBS_JOBID", "LSB_JOBID")
_RANK_ENV = ("OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK", "SLURM_PROCID")


def job_id_from_env(env: dict[str, str] | None = None) -> str | None:
    """The job id a launcher or batch system gives this process, if any."""
    env = os.environ if env is None else env
    if env.get("SLUICE_JOB_ID"):
        return env["SLUICE_JOB_ID"]
    if env.get("SLURM_JOB_ID"):
        step = env.get("SLURM_STEP_ID")
        return f"{env['SLURM_JOB_ID']}.{step}" if step else env["SLURM_JOB_ID"]
    for name in _JOB_ENV:
        if env.get(name):
            return env[name]
    return None


def new_job_id() -> str:
    return time.strftime("%Y%m%dT%H%M%S") + f"-{os.getpid()}"


def mpi_rank(env: dict[str, str] | None = None) -> int | None:
    env = os.environ if env is None else env
    for name in _RANK_ENV:
        v = env.get(name, "")
        if v.isdigit():
            return int(v)
    return None


def _with_preload(existing: str, lib: str, first: str = "") -> str:
    parts = [p for p in existing.replace(":", " ").split() if p and Path(p).name != Path(lib).name]
    # SLUICE_PRELOAD_FIRST: libraries that must precede ours in the program
    # only (a sanitizer runtime when testing a sanitized libsluice).
    parts = [p for p in first.replace(":", " ").split() if p] + parts
    # A sanitizer runtime must stay first in the list; otherwise we go first.
    if any(san in Path(p).name for san in ("asan", "ubsan", "tsan") for p in parts):
        return " ".join(parts + [lib])
    return " ".join([lib] + parts)


def sluice_env(
    base: dict[str, str],
    *,
    mode: str = "profile",
    paths: list[str] | None = None,
    log_dir: Path,
    job_id: str,
    extra: dict[str, str] | None = None,
) -> dict[str, str]:
    """The environment that runs a command under libsluice."""
    env = dict(base)
    env["LD_PRELOAD"] = _with_preload(env.get("LD_PRELOAD", ""), str(preload_library()),
                                      env.get("SLUICE_PRELOAD_FIRST", ""))
    env["SLUICE_MODE"] = mode
    env["SLUICE_LOG_DIR"] = str(log_dir)
    env["SLUICE_JOB_ID"] = job_id
    if paths:
        env["SLUICE_PATHS"] = ":".join(str(Path(p).absolute()) for p in paths)
    else:
        env.pop("SLUICE_PATHS", None)
    env.update(extra or {})
    return env
