"""What every rule reads besides a file's merged counters: the job's I/O
time, each process's counters of a file, the ranks, the mode each file ran
under, and the file system it is on."""

from __future__ import annotations

from dataclasses import dataclass, field

from sluice.advise.counters import io_time, v
from sluice.advise.fix import is_real
from sluice.report.model import SHARED, FileTotals, Job, per_process_app
from sluice.report.pattern import log_mounts, mount_of


def policy_rules(policy: str) -> list[tuple[str, str]]:
    """SLUICE_POLICY's items, (prefix, mode), as the library keeps them: `PREFIX=MODE` split at the last
    '='. A relative prefix was made absolute against a working directory the log does not hold: left out."""
    rules = []
    for item in policy.split(","):
        prefix, eq, mode = item.rpartition("=")
        if eq and mode and prefix.startswith("/"):
            rules.append((prefix.rstrip("/") or "/", mode))
    return rules


def _under(path: str, prefix: str) -> bool:
    return prefix == "/" or path == prefix or path.startswith(prefix + "/")


def mode_of(path: str, mode: str, rules: list[tuple[str, str]]) -> str:
    """The mode a process gave `path`: its policy's longest prefix over the path (of equal ones, the
    later, as src/core/policy.c), else the process's mode."""
    best = -1
    for prefix, m in rules:
        if len(prefix) >= best and _under(path, prefix):
            best, mode = len(prefix), m
    return mode


@dataclass
class Context:
    job: Job
    files: list[FileTotals]
    T: float                                          # the job's I/O time (s, summed over processes)
    proc_time: float                                  # the processes' run time (s, summed)
    per_proc: dict[str, dict[int, dict[str, float]]]  # path -> pid -> app counters
    rank: dict[int, int]                              # pid -> MPI rank (-1: none)
    hosts: int
    shared_pids: set[int] = field(default_factory=set)   # rows of Darshan's reduced shared records
    mounts: list[tuple[str, str]] = field(default_factory=list)   # (point, type) the logs name
    run_mode: dict[int, tuple[str, list[tuple[str, str]]]] = field(default_factory=dict)
    # pid -> (its mode, its policy's rules), for the logs that say

    def members(self, pid: int) -> set[int]:
        """The processes one row stands for: a Darshan record reduced over all ranks (rank -1)
        stands for every rank of the job (Darshan reduces only files every rank opened)."""
        if pid in self.shared_pids:
            return {p for p, r in self.rank.items() if r >= 0 and p not in self.shared_pids}
        return {pid}

    def procs(self, f: FileTotals, kind: str | None = None) -> int:
        """Processes that used the file (kind READ/WRITTEN: that moved such bytes)."""
        pp = self.per_proc.get(f.path)
        if not pp:
            return max(1, len(f.processes))
        if kind is None:
            return len(set().union(*(self.members(pid) for pid in pp)))
        return len(set().union(*(self.members(pid) for pid, d in pp.items()
                                 if v(d, f"POSIX_BYTES_{kind}", f"STDIO_BYTES_{kind}", f"MPIIO_BYTES_{kind}") > 0)))

    def writers(self, f: FileTotals) -> set[int]:
        pp = self.per_proc.get(f.path)
        if not pp:
            return set(f.processes)
        return set().union(*(self.members(pid) for pid, d in pp.items()
                             if v(d, "POSIX_BYTES_WRITTEN", "STDIO_BYTES_WRITTEN", "MPIIO_BYTES_WRITTEN") > 0))

    def max_opens_per_process(self, f: FileTotals) -> int:
        pp = self.per_proc.get(f.path)
        if not pp:
            return int(v(f.app, "POSIX_OPENS", "STDIO_OPENS") / max(1, len(f.processes)))
        return int(max(v(d, "POSIX_OPENS", "STDIO_OPENS") / len(self.members(pid)) for pid, d in pp.items()))

    def run_modes(self, path: str) -> set[str]:
        """The modes the processes that used the file gave it (their `mode` and `policy` keys); empty
        where no log says (a Darshan log)."""
        return {mode_of(path, *self.run_mode[pid]) for pid in self.per_proc.get(path, {}) if pid in self.run_mode}

    def mount(self, path: str) -> tuple[str, str] | None:
        """(point, type) of the mount holding the file; None where the logs name no mounts."""
        return mount_of(path, self.mounts)


def context(job: Job) -> Context:
    per_proc = per_process_app(job)
    rank = {log.pid: log.rank for log in job.logs}
    files = [f for f in job.files if is_real(f.path)]
    T = sum(io_time(f.app) for f in job.files)
    hosts = len({l.info.get("host", "?") for l in job.logs}) or 1
    shared = {l.pid for l in job.logs if SHARED in l.info}
    return Context(job, files, T, sum(l.runtime for l in job.logs), per_proc, rank, hosts, shared_pids=shared,
                   mounts=log_mounts(job.logs),
                   run_mode={l.pid: (l.info["mode"], policy_rules(l.info.get("policy", "")))
                             for l in job.logs if l.info.get("mode")})
