"""One run of one task: its working directory, environment and stage tier,
where its output goes, and what its end means.

Each attempt under stage mode gets a tier of its own in the farm's local
directory. A finished attempt's tier is empty (the library publishes before
the process ends) and is removed. A failed attempt that will be retried has
its tier discarded: the retry writes every file again. The last attempt of a
task that failed, or one stopped by SIGTERM, keeps its tier, so nothing it
wrote is lost (`sluice recover TIER` publishes it).

Before it starts, an attempt clears what the hand-out told it to from the
task's directory (taskdir.py): a retry or re-run finds the directory as the
first attempt did.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

from sluice.farm.journal import task_key
from sluice.farm.taskdir import KEEP, clear
from sluice.farm.tasks import Task
from sluice.farm.template import Template
from sluice.runner import sluice_env

DONE, FAILED, INTERRUPTED = "done", "failed", "interrupted"
TAIL_BYTES = 2048
# Variables that would make a task's own MPI program believe it is a rank of
# the farm's job (and hang trying to join it).
_LAUNCHER_ENV_PREFIXES = ("OMPI_", "PMIX_", "PMI_", "MPICH_", "HYDRA_", "I_MPI_")


@dataclass
class FarmSettings:
    """What every worker of a farm knows alike (each rank builds the same one)."""
    job: str
    template: Template
    tasks: dict[int, Task]
    mode: str                          # a sluice mode, or "off": the program alone
    log_dir: Path
    local_dir: Path
    sluice_extra: dict[str, str] = field(default_factory=dict)
    paths: list[str] = field(default_factory=list)
    total: int = 0
    rank: int = 0                      # this worker's MPI rank (0 when local)


@dataclass
class Result:
    number: int
    attempt: int
    outcome: str                  # DONE, FAILED or INTERRUPTED
    status: int                   # exit status; 128+N when killed by signal N
    seconds: float
    host: str
    slot: int
    detail: str = ""              # why it failed, beyond the status
    stderr_tail: str = ""
    kept_tier: str = ""           # a tier left for `sluice recover`
    rank: int = 0


class Attempt:
    def __init__(self, farm: FarmSettings, number: int, attempt: int, slot: int, last_try: bool,
                 clear_first: str = KEEP) -> None:
        self.farm = farm
        self.clear_first = clear_first
        self.task = farm.tasks[number]
        self.attempt = attempt
        self.slot = slot
        self.last_try = last_try
        tag = f"{_safe(farm.job)}.{number}.{attempt}"
        # Tiers are named by the task's identity, so a later run that
        # finishes the task can drop what an interrupted one kept.
        self.key = task_key(farm.template.argv(self.task, None), farm.template.directory(self.task))
        self.tier = farm.local_dir / "tiers" / f"{self.key}.{tag}" if farm.mode in ("stage", "auto") else None
        self.out_path = farm.local_dir / "out" / f"{tag}.out"
        self.err_path = farm.local_dir / "out" / f"{tag}.err"
        self.workdir = Path(farm.template.directory(self.task))
        self.proc: subprocess.Popen | None = None
        self.started = 0.0
        self.stop_reason = ""

    def start(self) -> Result | None:
        """Start the process; a Result at once if it could not be started."""
        self.started = time.monotonic()
        argv = self.farm.template.argv(self.task, self.slot)
        try:
            clear(self.workdir, self.clear_first)
            self.workdir.mkdir(parents=True, exist_ok=True)
            if self.tier is not None:
                self.tier.mkdir(mode=0o700)
            out = os.open(self.out_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o600)
            err = os.open(self.err_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o600)
        except OSError as e:
            return self._result(FAILED, 126, f"cannot prepare {e.filename}: {e.strerror}")
        try:
            self.proc = subprocess.Popen(argv, cwd=self.workdir, env=self._environment(), stdin=subprocess.DEVNULL,
                                         stdout=out, stderr=err, start_new_session=True)
        except OSError as e:
            status = 127 if isinstance(e, FileNotFoundError) else 126
            return self._result(FAILED, status, f"cannot run {argv[0]}: {e.strerror}")
        finally:
            os.close(out)
            os.close(err)
        return None

    def poll(self) -> Result | None:
        assert self.proc is not None
        rc = self.proc.poll()
        if rc is None:
            return None
        status = 128 - rc if rc < 0 else rc
        if self.stop_reason:
            return self._result(DONE if rc == 0 else INTERRUPTED, status, self.stop_reason if rc else "")
        if rc != 0:
            how = f"killed by signal {-rc} ({signal.Signals(-rc).name})" if rc < 0 else f"exit status {rc}"
            return self._result(FAILED, status, how)
        return self._result(DONE, 0, "")

    def signal(self, signum: int, reason: str) -> None:
        """Send signum to the task's whole process group (the farm is stopping)."""
        self.stop_reason = reason
        if self.proc is not None and self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signum)
            except ProcessLookupError:
                pass

    def _environment(self) -> dict[str, str]:
        base = {k: v for k, v in os.environ.items() if not k.startswith(_LAUNCHER_ENV_PREFIXES)}
        farm = self.farm
        base.update(SLUICE_FARM_TASK=str(self.task.number), SLUICE_FARM_ATTEMPT=str(self.attempt),
                    SLUICE_FARM_SLOT=str(self.slot), SLUICE_FARM_RANK=str(farm.rank), SLUICE_FARM_TASKS=str(farm.total),
                    SLUICE_FARM_JOB=farm.job)
        if farm.mode == "off":
            return base
        extra = dict(farm.sluice_extra)
        extra["SLUICE_QUIET"] = "1"
        if self.tier is not None:
            extra["SLUICE_TIER"] = str(self.tier)
        return sluice_env(base, mode=farm.mode, paths=farm.paths, log_dir=farm.log_dir,
                          job_id=task_job_id(farm.job, self.task.number), extra=extra)

    def _result(self, outcome: str, status: int, detail: str) -> Result:
        seconds = time.monotonic() - self.started
        tail = _tail(self.err_path)
        self._keep_output()
        if outcome == DONE and self.tier is not None:
            left = _publish_leftovers(self.tier)
            if left:
                outcome, detail = FAILED, f"{left} file{'s' if left != 1 else ''} could not be published"
        kept = ""
        if self.tier is not None and outcome == DONE:
            _drop_superseded_tiers(self.tier, self.key)
        if self.tier is not None:
            keep = outcome == INTERRUPTED or (outcome == FAILED and self.last_try)
            kept = _retire_tier(self.tier, keep)
            if kept:
                detail += f"; what it wrote is kept on {kept} (sluice recover {kept})"
        return Result(self.task.number, self.attempt, outcome, status, seconds, socket.gethostname(), self.slot,
                      detail, tail, kept, self.farm.rank)

    def _keep_output(self) -> None:
        """Non-empty output goes to task.out / task.err in the task's directory."""
        for src, name in ((self.out_path, "task.out"), (self.err_path, "task.err")):
            try:
                if src.stat().st_size > 0:
                    shutil.copyfile(src, self.workdir / name)
                src.unlink()
            except OSError:
                pass


def task_job_id(job: str, number: int) -> str:
    """The job id a task's sluice logs carry: the farm's, then the task number."""
    return f"{job}/{number}"


def _safe(text: str) -> str:
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in text)


def _tail(path: Path) -> str:
    try:
        with open(path, "rb") as f:
            f.seek(0, os.SEEK_END)
            size = f.tell()
            f.seek(max(0, size - TAIL_BYTES))
            return f.read().decode("utf-8", "replace")
    except OSError:
        return ""


def _publish_leftovers(tier: Path) -> int:
    """Publish what the task's processes left on its tier (a child that
    outlived its parent, a detached run); the number of files still there."""
    from sluice.stage import publish as pub
    from sluice.stage.scan import pending
    from sluice.stage.tier import open_tier

    t = open_tier(tier)
    if t is None or not pending(t):
        return 0
    pub.drain(t, jobs=2)
    return len(pending(t))


def _drop_superseded_tiers(tier: Path, key: str) -> None:
    """Tiers that earlier, interrupted or failed attempts of this task kept:
    the task has now written every file again and finished."""
    for other in tier.parent.glob(f"{key}.*"):
        if other != tier:
            shutil.rmtree(other, ignore_errors=True)


def _retire_tier(tier: Path, keep: bool) -> str:
    """Remove the attempt's tier; with keep, only if nothing is left in it."""
    if keep and _holds_data(tier):
        return str(tier)
    shutil.rmtree(tier, ignore_errors=True)
    return ""


def _holds_data(tier: Path) -> bool:
    try:
        return any((tier / "data").iterdir())
    except OSError:
        return False
