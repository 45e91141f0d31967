"""Merging the per-process logs of one job into job and per-file totals.

How counters combine across records and processes is decided by their
name, the same way for every module: MAX_BYTE_*, F_MAX_*_TIME, the
alignments and the rank fields of Darshan's reduced records (*_RANK*) take
the maximum, *_START_TIMESTAMP the earliest non-zero value,
*_END_TIMESTAMP the latest, everything else adds up; and, as Darshan reduces
them, the four most common values (*_ACCESS1..4_ACCESS with their _COUNTs,
*_STRIDE1..4_*) are the four most frequent of both lists (counts of a value
in both add up; ties go to the larger value), and *_MAX_*_TIME_SIZE is the
size of the slower of the two slowest calls (F_MAX_*_TIME). Timestamps are
made relative to the job's start (the earliest process start).
"""

from __future__ import annotations

import json
import re
import sys
from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TextIO

import numpy as np

from sluice.errors import UserError
from sluice.logfmt import Log, LogFormatError, Records, _printable, read_log
from sluice.report.tables import Table, is_property, merge_tables, write_files_json

SIDES = ("app", "fs")
# Marks the Log that holds a Darshan log's rank -1 records: files every rank
# shared, reduced by Darshan; it is no process of its own.
SHARED = "darshan_shared"
# The info key of a Log read from a Darshan log: that log's path.
DARSHAN_LOG = "darshan_log"

# The counters that each count one call the program made.
OP_COUNTERS = tuple(f"POSIX_{k}" for k in ("OPENS", "READS", "WRITES", "SEEKS", "STATS", "FSYNCS", "FDSYNCS",
                                           "TRUNCATES", "UNLINKS", "RENAMES", "MKDIRS", "RMDIRS", "DUPS")) + \
    tuple(f"STDIO_{k}" for k in ("OPENS", "READS", "WRITES", "SEEKS", "FLUSHES"))


def combine(name: str, a: float, b: float) -> float:
    """Two values of one counter combined (the common values and the slowest
    call's size need their group: merge_counters)."""
    if "MAX_BYTE" in name or "_F_MAX_" in name or name.endswith("ALIGNMENT") or "_RANK" in name or is_property(name):
        return max(a, b)
    if name.endswith("_START_TIMESTAMP"):
        if a == 0:
            return b
        return a if b == 0 else min(a, b)
    if name.endswith("_END_TIMESTAMP"):
        return max(a, b)
    return a + b


def common_groups(names) -> list[tuple[list[str], list[str]]]:
    """The four-most-common-values groups among counter names: (the four
    value names, the four count names), e.g. POSIX_ACCESS1_ACCESS.. and
    POSIX_ACCESS1_COUNT..."""
    out = []
    for n in names:
        for what in ("ACCESS", "STRIDE"):
            if n.endswith(f"_{what}1_{what}"):
                p = n[: -len(f"_{what}1_{what}")]
                out.append(([f"{p}_{what}{i}_{what}" for i in range(1, 5)],
                            [f"{p}_{what}{i}_COUNT" for i in range(1, 5)]))
    return out


def time_size_pairs(names) -> list[tuple[str, str]]:
    """(size counter, time counter) of the slowest calls: POSIX_MAX_READ_TIME_SIZE
    goes with POSIX_F_MAX_READ_TIME."""
    out = []
    for n in names:
        if n.endswith("_TIME_SIZE") and "_MAX_" in n:
            p, _, rest = n.partition("_MAX_")
            out.append((n, f"{p}_F_MAX_{rest[: -len('_SIZE')]}"))
    return out


def top_four(pairs) -> list[tuple[int, int]]:
    """The four most frequent non-zero values of (value, count) pairs, counts
    of one value added: higher count first, then the larger value; (0, 0)
    where there are fewer."""
    counts: dict[int, int] = {}
    for v, c in pairs:
        if v and c > 0:
            counts[v] = counts.get(v, 0) + c
    best = sorted(counts.items(), key=lambda vc: (-vc[1], -vc[0]))[:4]
    return best + [(0, 0)] * (4 - len(best))


def merge_counters(dst: dict, src: Mapping) -> None:
    """src's counters combined into dst, as two records of one file combine."""
    groups = [g for g in common_groups(src) if g[0][0] in dst]
    pairs = [(s, t) for s, t in time_size_pairs(src) if s in dst and t in dst and t in src]
    merged = [top_four([(dst[v], dst[c]) for v, c in zip(*g)] + [(src[v], src[c]) for v, c in zip(*g)])
              for g in groups]
    sizes = [src[s] if src[t] > dst[t] else dst[s] for s, t in pairs]
    for k, v in src.items():
        dst[k] = combine(k, dst[k], v) if k in dst else v
    for (vals, cnts), top in zip(groups, merged):
        for i, (v, c) in enumerate(top):
            dst[vals[i]], dst[cnts[i]] = v, c
    for (s, _), size in zip(pairs, sizes):
        dst[s] = size


@dataclass(slots=True)
class FileTotals:
    path: str
    app: Mapping[str, float] = field(default_factory=dict)
    fs: Mapping[str, float] = field(default_factory=dict)
    processes: set[int] = field(default_factory=set)
    # bytes() and ops() of app, then of fs, when merge worked them out for
    # every file at once
    known: tuple[int, int, int, int] | None = field(default=None, repr=False, compare=False)

    def ops(self, side: str = "app") -> int:
        if self.known is not None:
            return self.known[1 if side == "app" else 3]
        c = getattr(self, side)
        return int(sum(c.get(k, 0) for k in OP_COUNTERS))

    def bytes(self, side: str = "app") -> int:
        """Bytes moved to and from the file. MPI-IO's bytes travel through
        POSIX calls that are recorded too: the same data, counted once (the
        larger of the two); stdio's go through calls no wrapper sees."""
        if self.known is not None:
            return self.known[0 if side == "app" else 2]
        c = getattr(self, side)

        def moved(module: str) -> float:
            return c.get(f"{module}_BYTES_READ", 0) + c.get(f"{module}_BYTES_WRITTEN", 0)

        return int(max(moved("POSIX"), moved("MPIIO")) + moved("STDIO"))


@dataclass
class DamagedLog:
    """A log that could not be read whole (logfmt.read_log(salvage=True))."""
    path: str
    problems: list[str]     # what was wrong, then what was left out
    used: bool              # what could be read of it is in the job


@dataclass
class Job:
    job_id: str
    logs: list[Log]
    app: dict[str, float]
    fs: dict[str, float]
    files: list[FileTotals]
    start_ns: int
    end_ns: int
    # HDF5 datasets and PnetCDF variables (records named FILE:NAME): their
    # counters are the H5D or PNETCDF_VAR module's, not a file's, so they
    # stay out of the files' tables and counts
    datasets: list[FileTotals] = field(default_factory=list)
    # the logs of this job that could not be read whole (load_job)
    damaged: list[DamagedLog] = field(default_factory=list)

    @property
    def processes(self) -> int:
        return sum(1 for l in self.logs if SHARED not in l.info)

    @property
    def runtime(self) -> float:
        return max(0.0, (self.end_ns - self.start_ns) / 1e9)

    @property
    def partial(self) -> bool:
        return any(l.partial for l in self.logs)

    def _head(self) -> dict:
        from sluice.report.summary import summary_json

        return {
            "job_id": self.job_id,
            "processes": self.processes,
            "runtime_s": self.runtime,
            "partial": self.partial,
            "logs": list(dict.fromkeys(str(l.path) for l in self.logs)),
            **summary_json(self),
            "app": self.app,
            "fs": self.fs,
            "mounts": self.mounts(),
        }

    def mounts(self) -> list[dict]:
        """The mounts the logs name, with how many recorded files each holds,
        their bytes and operations."""
        from sluice.report.summary import mount_summary

        return mount_summary(self)

    def to_json(self) -> dict:
        def entries(files: list[FileTotals]) -> list[dict]:
            return [{"path": f.path, "processes": len(f.processes), "app": dict(f.app), "fs": dict(f.fs)}
                    for f in files]

        return {**self._head(), "files": entries(self.files), "datasets": entries(self.datasets)}

    def write_json(self, out: TextIO, extra: dict | None = None) -> None:
        """json.dumps({**to_json(), **extra}, indent=1) and a newline, written
        to `out` a file at a time: the files' counters are never all Python
        objects, nor all of the text one string."""
        lists = {"files": self.files, "datasets": self.datasets}
        head = json.dumps({**self._head(), **{k: f"\0{k}\0" for k in lists}, **(extra or {})}, indent=1)
        for key, files in lists.items():
            before, _, head = head.partition(json.dumps(f"\0{key}\0"))
            out.write(before)
            if not files:
                out.write("[]")
            else:
                out.write("[\n")
                write_files_json(files, out)
                out.write("\n ]")
        out.write(head)
        out.write("\n")


def find_logs(inputs: list[str | Path], darshan: bool = True) -> list[Path]:
    """The log files named, or found directly inside the directories named:
    .sluice, and .darshan unless `darshan` is false. A NAME.fs.darshan beside
    its NAME.darshan is left out: it is read as that log's fs side."""
    found: list[Path] = []
    for i in inputs:
        p = Path(i)
        if p.is_dir():
            pats = ("*.sluice", "*.darshan") if darshan else ("*.sluice",)
            found.extend(sorted(q for pat in pats for q in p.glob(pat) if q.is_file()))
        elif p.exists():
            found.append(p)
        else:
            raise UserError(f"{p}: no such file or directory")
    names = {str(p) for p in found}
    return [p for p in found
            if not (p.name.endswith(".fs.darshan") and str(p)[: -len(".fs.darshan")] + ".darshan" in names)]


def _read_any(p: Path, sluice_only: bool, salvage: bool) -> list[Log]:
    from sluice.darshan.reader import looks_like_darshan, read_darshan

    if looks_like_darshan(p):
        if sluice_only:
            raise LogFormatError(f"{p}: a Darshan log; this command reads sluice logs")
        return read_darshan(p)
    return [read_log(p, salvage=salvage)]


def _problem(p: Path, e: LogFormatError) -> str:
    """The problem of an error 'PATH: problem' without its path."""
    text = str(e)
    head = f"{_printable(p)}: "
    return text[len(head):] if text.startswith(head) else text


def load_logs(inputs: list[str | Path], warn=None, sluice_only: bool = False,
              damaged: list[DamagedLog] | None = None) -> list[Log]:
    """Read every log (sluice's, and Darshan's through PyDarshan unless
    `sluice_only`). Inside a directory, a damaged sluice log gives what can
    be read of it (with a warning), and a log of which nothing can be used
    is skipped with a warning; both kinds are added to `damaged` when it is
    given. A log named explicitly is read whole or is an error."""
    warn = warn or (lambda msg: print(f"sluice: warning: {msg}", file=sys.stderr))
    named = {Path(i) for i in inputs if not Path(i).is_dir()}
    logs: list[Log] = []
    found = damaged if damaged is not None else []
    for p in find_logs(inputs, darshan=not sluice_only):
        try:
            read = _read_any(p, sluice_only, salvage=p not in named)
        except LogFormatError as e:
            if p in named:
                raise UserError(str(e)) from None
            warn(f"{e}; skipped")
            found.append(DamagedLog(str(p), _problem(p, e).split("; "), False))
            continue
        for l in read:
            if l.damage:
                warn(f"{_printable(p)}: {'; '.join(l.damage)}; what could be read is used")
                found.append(DamagedLog(str(p), list(l.damage), True))
        logs.extend(read)
    own = {l.job_id for l in logs if DARSHAN_LOG not in l.info}
    exported = {l.info[DARSHAN_LOG] for l in logs if DARSHAN_LOG in l.info and l.job_id in own}
    if exported:        # `sluice export -o` into the log directory: the same job twice
        warn(f"{', '.join(sorted(exported))}: a Darshan export of sluice logs also given; skipped")
        logs = [l for l in logs if l.info.get(DARSHAN_LOG) not in exported]
    if not logs:
        if found:
            raise UserError(f"no readable sluice logs in {', '.join(str(i) for i in inputs)} "
                            f"({len(found)} could not be read)")
        raise UserError(f"no sluice logs in {', '.join(str(i) for i in inputs)} "
                        "(a process that recorded no I/O writes none)")
    return logs


def farm_job(job_id: str) -> str:
    """The job a log belongs to: a `sluice farm` task's logs carry JOB/N
    (the farm's job, then the task number) and belong to JOB."""
    head, sep, tail = job_id.rpartition("/")
    return head if sep and head and tail.isdigit() else job_id


def task_rows(job: "Job") -> list[dict]:
    """One row per farm task of a job (empty when it is not a farm): its
    processes, run time, and the metadata operations and bytes of each side."""
    from sluice.farm.summary import META_COUNTERS

    by_task: dict[str, list[Log]] = defaultdict(list)
    for l in job.logs:
        head, sep, tail = l.job_id.rpartition("/")
        if sep and tail.isdigit():
            by_task[tail].append(l)
    rows = []
    for task in sorted(by_task, key=int):
        logs = by_task[task]
        row = {"task": int(task), "processes": len(logs),
               "runtime_s": (max(l.end_ns for l in logs) - min(l.start_ns for l in logs)) / 1e9}
        for side in ("app", "fs"):
            meta = written = 0
            for l in logs:
                for r in l.records:
                    c = getattr(r, side)
                    meta += sum(int(c.get(k, 0)) for k in META_COUNTERS)
                    written += int(c.get("POSIX_BYTES_WRITTEN", 0))
            row[f"{side}_meta_ops"], row[f"{side}_bytes_written"] = meta, written
        rows.append(row)
    return rows


def process_rows(job: Job) -> list[dict]:
    """One row per process (report --per-process), in the spirit of
    PyDarshan's per-rank records: who it was, when it ran, and per module and
    side the totals of its files' counters (timestamps from the job's start),
    named as a Darshan record of that module names them ("counters",
    "fcounters"; what only sluice counts under "sluice"). A Darshan log's
    records of files all ranks shared make a row of rank -1 and pid 0."""
    from sluice.darshan import layout as L
    from sluice.darshan.mapping import DARSHAN_IDS, dropped, to_darshan

    ordered = sorted(job.logs, key=lambda x: (x.start_ns, x.pid))
    row_of = {id(l): i for i, l in enumerate(ordered)}
    merged = merge_tables(ordered, job.start_ns, lambda l, path: row_of[id(l)], {}, nrows=len(ordered))
    tables = {side: merged[side].all_counters() for side in SIDES}
    rows = []
    for i, l in enumerate(ordered):
        shared = SHARED in l.info
        modules: dict[str, dict] = {}
        for m in sorted(l.modules.values(), key=lambda m: m.id):
            names = set(m.int_names) | set(m.float_names)
            if not any(k in names for k in tables["app"][i]) and not any(k in names for k in tables["fs"][i]):
                continue
            mid = DARSHAN_IDS.get(m.name)
            entry = {}
            for side in SIDES:
                c = {k: v for k, v in tables[side][i].items() if k in names}
                if mid is None:
                    entry[side] = {"counters": {k: c.get(k, 0) for k in m.int_names},
                                   "fcounters": {k: c.get(k, 0.0) for k in m.float_names}}
                    continue
                ints, floats = to_darshan(mid, c)
                entry[side] = {"counters": dict(zip(L.INT_NAMES[mid], ints)),
                               "fcounters": dict(zip(L.FLOAT_NAMES[mid], floats)),
                               "sluice": dropped(mid, c)}
            modules[L.MODULE_NAMES[mid] if mid is not None else m.name] = entry
        rows.append({"rank": l.rank, "pid": 0 if shared else l.pid, "host": l.info.get("host", ""),
                     "exe": l.info.get("exe", ""), "start_ns": l.start_ns, "end_ns": l.end_ns,
                     "start_s": (l.start_ns - job.start_ns) / 1e9, "runtime_s": l.runtime,
                     "end_reason": l.end_reason, "files": len(_paths(l)),
                     "modules": modules})
    return rows


def per_process_app(job: Job) -> dict[str, dict[int, Mapping[str, float]]]:
    """path -> pid -> the app counters of that process's records of the file
    (logs of one pid merged, in the order of job.logs; timestamps as logged)."""
    rows: dict[tuple[str, int], int] = {}
    merged = merge_tables(job.logs, None, lambda l, path: rows.setdefault((path, l.pid), len(rows)), {}, ("app",))
    counters = merged["app"].all_counters()
    out: dict[str, dict[int, Mapping[str, float]]] = defaultdict(dict)
    for (path, pid), c in zip(rows, counters):
        # (a process that never used the file on the program's side, the
        # job's stage drainer that published it, is not one of its users)
        if any(c.get(k, 0) > 0 for k in _USES):
            out[path][pid] = c
    return out


# App-side counters that say a process used a file.
_USES = ("POSIX_OPENS", "POSIX_READS", "POSIX_WRITES", "POSIX_STATS", "POSIX_SEEKS", "POSIX_UNLINKS", "POSIX_RENAMES",
         "POSIX_MKDIRS", "POSIX_RMDIRS", "POSIX_FSYNCS", "POSIX_MMAPS",
         "STDIO_OPENS", "STDIO_READS", "STDIO_WRITES", "MPIIO_INDEP_OPENS",
         "MPIIO_COLL_OPENS", "H5F_OPENS", "H5D_OPENS")


def _paths(l: Log) -> set[str]:
    if isinstance(l.records, Records):
        return {p for b in l.records.blocks for p in b.paths}
    return {r.path for r in l.records}


def select_job(logs: list[Log], job: str | None = None, warn=None) -> tuple[str, list[Log]]:
    """The logs of one job: the one asked for, else the most recent."""
    warn = warn or (lambda msg: print(f"sluice: note: {msg}", file=sys.stderr))
    by_job: dict[str, list[Log]] = defaultdict(list)
    for l in logs:
        by_job[farm_job(l.job_id)].append(l)
    if job is not None and job not in by_job:
        tasks = [l for l in logs if l.job_id == job]  # one task of a farm: JOB/N
        if tasks:
            return job, tasks
    if job is not None:
        if job not in by_job:
            raise UserError(f"no logs of job {job!r} (jobs found: {', '.join(sorted(by_job))})")
        return job, by_job[job]
    latest = max(by_job, key=lambda j: max(l.start_ns for l in by_job[j]))
    if len(by_job) > 1:
        warn(f"{len(by_job)} jobs found; reporting the latest, {latest} (choose with --job)")
    return latest, by_job[latest]


def zero_counters(logs: list[Log]) -> dict[str, float]:
    """Every counter any log's schema names, at zero (MAX_BYTE at -1): the
    job's totals start from it, so that a module with no activity still
    reads as zeros."""
    zero: dict[str, float] = {}
    for l in logs:
        for m in l.modules.values():
            for name in m.int_names:
                zero.setdefault(name, -1 if "MAX_BYTE" in name else 0)
            for name in m.float_names:
                zero.setdefault(name, 0.0)
    return zero


def merge(job_id: str, logs: list[Log]) -> Job:
    start = min(l.start_ns for l in logs)
    end = max(l.end_ns for l in logs)
    zero = zero_counters(logs)
    ordered = sorted(logs, key=lambda x: (x.start_ns, x.pid))
    paths: dict[str, int] = {}
    processes: list[set[int]] = []

    def file_of(l: Log, path: str) -> int:
        i = paths.get(path)
        if i is None:
            i = paths[path] = len(processes)
            processes.append(set())
        if SHARED in l.info:
            processes[i].update(range(l.nprocs))
        else:
            processes[i].add(l.pid)
        return i

    tables = merge_tables(ordered, start, file_of, zero)
    app, fs = tables["app"], tables["fs"]
    app_counters = app.all_counters()
    fs_counters = app_counters if fs is app else fs.all_counters()
    files = [FileTotals(p, a, f, procs) for p, a, f, procs in zip(paths, app_counters, fs_counters, processes)]
    for f, known in zip(files, zip(_file_bytes(app).tolist(), _file_ops(app).tolist(),
                                   _file_bytes(fs).tolist(), _file_ops(fs).tolist())):
        f.known = known
    is_dataset = (app.column("H5D_OPENS") + app.column("H5D_READS") + app.column("H5D_WRITES")
                  + app.column("PNETCDF_VAR_OPENS") + app.column("PNETCDF_VAR_BYTES_READ")
                  + app.column("PNETCDF_VAR_BYTES_WRITTEN") > 0).tolist()
    by_size = sorted(files, key=lambda f: (-f.bytes(), -f.ops(), f.path))
    datasets = [f for f, d in zip(files, is_dataset) if d]
    if datasets:
        keep = {id(f) for f in datasets}
        by_size = [f for f in by_size if id(f) not in keep]
    return Job(job_id, logs, app.totals(), fs.totals(), by_size, start, end, datasets)


def _file_ops(table: Table) -> np.ndarray:
    """FileTotals.ops() of every row."""
    total = np.zeros(len(table.sig), dtype=np.int64)
    for k in OP_COUNTERS:
        total = total + table.column(k)
    return total.astype(np.int64)


def _file_bytes(table: Table) -> np.ndarray:
    """FileTotals.bytes() of every row."""
    def moved(module: str) -> np.ndarray:
        return table.column(f"{module}_BYTES_READ") + table.column(f"{module}_BYTES_WRITTEN")

    return (np.maximum(moved("POSIX"), moved("MPIIO")) + moved("STDIO")).astype(np.int64)


def log_name_prefix(job_id: str) -> str:
    """How a log's file name of this job begins (JOB_HOST_PID_EXE_START.sluice,
    docs/logformat.md): a farm task's JOB/N is JOB_N, so JOB_ covers them."""
    return re.sub(r"[^A-Za-z0-9._-]", "_", job_id) + "_"


def damaged_of_job(job_id: str, logs: list[Log], all_logs: list[Log], damaged: list[DamagedLog]) -> list[DamagedLog]:
    """The damaged logs that belong to a job: those read in part whose
    process is among its logs; of those not read at all, the ones whose
    file name begins with its id, and the ones whose name begins with no
    job's id (which job they were cannot be told)."""
    mine = {str(l.path) for l in logs}
    prefixes = {log_name_prefix(farm_job(l.job_id)) for l in all_logs}
    own = log_name_prefix(job_id)
    out = []
    for d in damaged:
        name = Path(d.path).name
        if d.used:
            if d.path in mine:
                out.append(d)
        elif name.startswith(own) or not any(name.startswith(x) for x in prefixes):
            out.append(d)
    return out


def load_job(inputs: list[str | Path], job: str | None = None) -> Job:
    damaged: list[DamagedLog] = []
    all_logs = load_logs(inputs, damaged=damaged)
    job_id, logs = select_job(all_logs, job)
    j = merge(job_id, logs)
    j.damaged = damaged_of_job(job_id, logs, all_logs, damaged)
    return j
