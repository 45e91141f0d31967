"""A sluice job as Darshan logs: one for the application's view (app), one for
what reached the file system (fs), with the job's ranks, times and files.

Ranks: an MPI job keeps its MPI ranks (processes without one, such as a
script around the program, are left out and counted in the metadata); any
other job numbers its processes 0..N-1 in start order. A file every rank of
an MPI job used becomes one record of rank -1, reduced the way Darshan
reduces shared files (sums, earliest start, latest end, fastest and slowest
rank, variances); --per-rank keeps one record per rank.
"""

from __future__ import annotations

import os
import re
import socket
import struct
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

from sluice import __version__
from sluice.darshan import layout as L
from sluice.darshan.mapping import DARSHAN_IDS, SLUICE_MODULES, to_darshan, visible
from sluice.darshan.recid import record_id
from sluice.darshan.writer import DarshanJob, ModuleData, write
from sluice.logfmt import Log
from sluice.report.model import SIDES, merge_counters
from sluice.report.pattern import log_mounts, mount_of

OTHER_FILES = "<other files>"


@dataclass
class RankRecord:
    """One module's counters of one file in one rank (all its logs merged), both sides."""
    module: int
    path: str
    rank: int
    app: dict[str, float] = field(default_factory=dict)
    fs: dict[str, float] = field(default_factory=dict)


@dataclass
class RankedJob:
    job_id: str
    logs: list[Log]                 # the logs that have a rank
    rank_of: dict[int, int]         # id(log) -> rank
    nprocs: int
    mpi: bool
    left_out: list[Log]
    start_ns: int
    end_ns: int

    @property
    def first(self) -> Log:
        """The first log of rank 0: its program names the job."""
        return min(self.logs, key=lambda l: (self.rank_of[id(l)], l.start_ns))


def assign_ranks(job_id: str, logs: list[Log]) -> RankedJob:
    ranked = [l for l in logs if l.rank >= 0]
    if ranked:
        nprocs = max(max(l.nprocs for l in ranked), max(l.rank for l in ranked) + 1)
        rank_of = {id(l): l.rank for l in ranked}
        left_out = [l for l in logs if l.rank < 0]
    else:
        ranked = sorted(logs, key=lambda l: (l.start_ns, l.pid))
        rank_of = {id(l): i for i, l in enumerate(ranked)}
        nprocs = len(ranked)
        left_out = []
    # the job's span is its ranks' (what the Darshan log describes)
    return RankedJob(job_id, ranked, rank_of, nprocs, any(l.rank >= 0 for l in logs), left_out,
                     min(l.start_ns for l in ranked), max(l.end_ns for l in ranked))


def _shifted(c: dict[str, float], offset: float) -> dict[str, float]:
    return {k: (v + offset if "_TIMESTAMP" in k and v else v) for k, v in c.items()}


def rank_records(job: RankedJob) -> list[RankRecord]:
    """Per rank, per module, per file: the logs' records merged, timestamps
    made relative to the job's start."""
    out: dict[tuple[int, int, str], RankRecord] = {}
    for l in sorted(job.logs, key=lambda x: (x.start_ns, x.pid)):
        rank = job.rank_of[id(l)]
        offset = (l.start_ns - job.start_ns) / 1e9
        for r in l.records:
            mid = DARSHAN_IDS.get(r.module)
            if mid is None:
                continue
            rr = out.setdefault((rank, mid, r.path), RankRecord(mid, r.path, rank))
            for side in SIDES:
                merge_counters(getattr(rr, side), _shifted(getattr(r, side), offset))
    return sorted(out.values(), key=lambda r: (r.module, r.rank, r.path))


def _io_time(module: int, c: dict[str, float]) -> float:
    prefix = SLUICE_MODULES[module]
    return sum(c.get(f"{prefix}_F_{k}_TIME", 0.0) for k in ("READ", "WRITE", "META"))


def _bytes(module: int, c: dict[str, float]) -> float:
    prefix = SLUICE_MODULES[module]
    return c.get(f"{prefix}_BYTES_READ", 0) + c.get(f"{prefix}_BYTES_WRITTEN", 0)


def _variance(xs: list[float]) -> float:
    mean = sum(xs) / len(xs)
    return sum((x - mean) ** 2 for x in xs) / len(xs)


def _file_of_dataset(module: int, path: str) -> str:
    """The file of an H5D record's name "<file>:<dataset path>", or of a
    PNETCDF_VAR record's "<file>:<variable>"."""
    i = path.find(":/") if module == L.H5D else path.rfind(":")
    return path[:i] if i > 0 else path


def _pack(module: int, rank: int, path: str, ints: list[int], floats: list[float]) -> bytes:
    if module in L.WITH_FILE_ID:
        return L.record_struct(module).pack(record_id(path), rank, record_id(_file_of_dataset(module, path)), *ints,
                                            *floats)
    return L.record_struct(module).pack(record_id(path), rank, *ints, *floats)


def _shared(module: int, path: str, parts: list[RankRecord], side: str) -> bytes:
    """One rank -1 record of a file every rank used, as Darshan reduces it."""
    total: dict[str, float] = {}
    for p in parts:
        merge_counters(total, getattr(p, side))
    ints, floats = to_darshan(module, total)
    times = [(_io_time(module, getattr(p, side)), p.rank, _bytes(module, getattr(p, side))) for p in parts]
    fastest = min(times, key=lambda t: (t[0], t[1]))
    slowest = max(times, key=lambda t: (t[0], -t[1]))
    prefix = SLUICE_MODULES[module]
    iset = {f"{prefix}_FASTEST_RANK": fastest[1], f"{prefix}_FASTEST_RANK_BYTES": fastest[2],
            f"{prefix}_SLOWEST_RANK": slowest[1], f"{prefix}_SLOWEST_RANK_BYTES": slowest[2]}
    fset = {f"{prefix}_F_FASTEST_RANK_TIME": fastest[0], f"{prefix}_F_SLOWEST_RANK_TIME": slowest[0],
            f"{prefix}_F_VARIANCE_RANK_TIME": _variance([t[0] for t in times]),
            f"{prefix}_F_VARIANCE_RANK_BYTES": _variance([t[2] for t in times])}
    for i, n in enumerate(L.INT_NAMES[module]):
        if n in iset:
            ints[i] = int(iset[n])
    for i, n in enumerate(L.FLOAT_NAMES[module]):
        if n in fset:
            floats[i] = float(fset[n])
    return _pack(module, -1, path, ints, floats)


def modules_of(job: RankedJob, records: list[RankRecord], side: str, per_rank: bool) -> \
        tuple[dict[int, ModuleData], dict[int, str]]:
    by_file: dict[tuple[int, str], list[RankRecord]] = defaultdict(list)
    for r in records:
        by_file[(r.module, r.path)].append(r)
    mods: dict[int, ModuleData] = {}
    names: dict[int, str] = {}
    for (mid, path), parts in by_file.items():
        m = mods.setdefault(mid, ModuleData())
        shared = job.mpi and not per_rank and job.nprocs > 1 and len({p.rank for p in parts}) == job.nprocs
        packed: list[bytes] = []
        if shared:
            if any(visible(to_darshan(mid, getattr(p, side))[0], mid) for p in parts):
                packed.append(_shared(mid, path, parts, side))
        else:
            for p in parts:
                ints, floats = to_darshan(mid, getattr(p, side))
                if visible(ints, mid):
                    packed.append(_pack(mid, p.rank, path, ints, floats))
        if packed:
            m.records.extend(packed)
            names[record_id(path)] = path
            m.partial = m.partial or path == OTHER_FILES
    return mods, names


def dxt_modules(job: RankedJob) -> tuple[dict[int, ModuleData], dict[int, str]]:
    """The processes' traces (sluice run --trace) as Darshan's DXT_POSIX and
    DXT_MPIIO modules: one record per file and rank, its writes then its
    reads, times from the job's start."""
    segs: dict[tuple[int, str, int], tuple[list, list, str]] = {}
    for l in job.logs:
        t = l.trace
        if t is None or not len(t):
            continue
        rank = job.rank_of[id(l)]
        shift = (l.start_ns - job.start_ns) / 1e9
        for path, mod, op, off, n, t0, t1 in zip(t.paths, t.module.tolist(), t.op.tolist(), t.offset.tolist(),
                                                  t.length.tolist(), t.start_ns.tolist(), t.end_ns.tolist()):
            mid = {1: L.DXT_POSIX, 3: L.DXT_MPIIO}.get(mod)
            if mid is None:
                continue
            w, r, _ = segs.setdefault((mid, path, rank), ([], [], l.info.get("host", "")))
            (w if op else r).append(L.DXT_SEGMENT.pack(off, n, shift + t0 / 1e9, shift + t1 / 1e9))
    mods: dict[int, ModuleData] = {}
    names: dict[int, str] = {}
    for (mid, path, rank), (w, r, host) in sorted(segs.items()):
        head = L.DXT_RECORD.pack(record_id(path), rank, 0, host.encode()[:63], len(w), len(r))
        mods.setdefault(mid, ModuleData()).records.append(head + b"".join(w) + b"".join(r))
        names[record_id(path)] = path
    return mods, names


def lustre_module(job: RankedJob, records: list[RankRecord]) -> tuple[dict[int, ModuleData], dict[int, str]]:
    """Darshan's LUSTRE module for the files on Lustre mounts whose layout the
    runtime read at open (POSIX_STRIPE_SIZE, ...): one record per file (rank
    -1 when several ranks opened it), its first component as sluice reads it
    (stripe size and count, RAID0, the whole file); its OST ids are -1:
    sluice does not read them."""
    mounts = log_mounts(job.logs)
    by_file: dict[str, list[RankRecord]] = defaultdict(list)
    for r in records:
        if r.module == L.POSIX and r.app.get("POSIX_STRIPE_SIZE", 0) > 0:
            m = mount_of(r.path, mounts)
            if m and m[1] == "lustre":
                by_file[r.path].append(r)
    mods: dict[int, ModuleData] = {}
    names: dict[int, str] = {}
    for path, parts in sorted(by_file.items()):
        c = parts[0].app
        rank = parts[0].rank if len({p.rank for p in parts}) == 1 else -1
        count = int(c.get("POSIX_STRIPE_COUNT", 0))
        stripes = max(0, count)
        comp = L.LUSTRE_COMP.pack(int(c["POSIX_STRIPE_SIZE"]), count, 1, 0, 0, -1, 0, b"")
        osts = b"".join(struct.pack("<q", -1) for _ in range(stripes))
        mods.setdefault(L.LUSTRE, ModuleData()).records.append(
            L.LUSTRE_HEAD.pack(record_id(path), rank, 1, stripes) + comp + osts)
        names[record_id(path)] = path
    return mods, names


def _mounts(logs: list[Log], paths: set[str]) -> list[tuple[str, str]]:
    """The mount points of the recorded files, with their types: as the logs
    name them, and for logs that do not (older ones), from this host's
    /proc/self/mounts when it is the one the job ran on."""
    named = log_mounts(logs)
    if named:
        used = {"/": dict(named).get("/", "unknown")}
        for p in paths:
            m = mount_of(p, named)
            if m:
                used[m[0]] = m[1]
        return sorted(used.items())
    hosts = {l.info.get("host") for l in logs}
    if hosts != {socket.gethostname()}:
        return [("/", "unknown")]
    table: dict[str, str] = {}
    try:
        with open("/proc/self/mounts", encoding="utf-8", errors="replace") as f:
            for line in f:
                parts = line.split()
                if len(parts) >= 3:
                    table[parts[1].replace("\\040", " ")] = parts[2]
    except OSError:
        return [("/", "unknown")]
    used = {"/": table.get("/", "unknown")}
    for p in paths:
        best = max((m for m in table if p == m or p.startswith(m.rstrip("/") + "/")), key=len, default=None)
        if best:
            used[best] = table[best]
    return sorted(used.items())


def _exe_line(log: Log) -> str:
    """Darshan's exe: the program's absolute path and its arguments."""
    exe = log.info.get("exe", "")
    cmd = log.info.get("cmdline", "")
    args = cmd.split(" ", 1)[1] if " " in cmd else ""
    return f"{exe} {args}".strip() if exe else cmd


def _jobid(job: RankedJob) -> int:
    m = re.fullmatch(r"\d{1,18}", job.job_id)
    if m:
        return int(job.job_id)
    return job.first.pid        # as Darshan does outside a batch system: the pid of rank 0


def log_stem(job: RankedJob) -> str:
    exe = Path(job.first.info.get("exe", "") or "program").name
    return re.sub(r"[^A-Za-z0-9._-]", "_", f"{exe}_{job.job_id}")


@dataclass
class Exported:
    app: Path
    fs: Path
    app_bytes: int
    fs_bytes: int
    records: int
    left_out: int


def export_job(job_id: str, logs: list[Log], out_dir: Path, per_rank: bool = False) -> Exported:
    job = assign_ranks(job_id, logs)
    if not job.logs:
        from sluice.errors import UserError

        raise UserError(f"job {job_id}: no process with an MPI rank to export")
    records = rank_records(job)
    first = job.first
    stem = log_stem(job)
    paths = {"app": out_dir / f"{stem}.darshan", "fs": out_dir / f"{stem}.fs.darshan"}
    try:
        uid = os.stat(first.path).st_uid
    except OSError:
        uid = os.getuid()
    mounts = _mounts(job.logs, {r.path for r in records})
    sizes = {}
    nrec = 0
    for side in SIDES:
        mods, names = modules_of(job, records, side, per_rank)
        if side == "app":   # the trace is of the calls the application made
            dxt, dxt_names = dxt_modules(job)
            mods.update(dxt)
            names.update(dxt_names)
        lus, lus_names = lustre_module(job, records)    # the files' layout: the same in both views
        mods.update(lus)
        names.update(lus_names)
        md = {"lib_ver": f"sluice-{__version__}", "sluice_view": side, "sluice_job_id": job.job_id, "sluice_version": __version__,
              "sluice_mode": ",".join(sorted({l.info.get("mode", "?") for l in job.logs})),
              "sluice_host": ",".join(sorted({l.info.get("host", "?") for l in job.logs})),
              ("sluice_fs_log" if side == "app" else "sluice_app_log"): paths["fs" if side == "app" else "app"].name}
        if job.left_out:
            md["sluice_processes_left_out"] = str(len(job.left_out))
        djob = DarshanJob(uid=uid, start_ns=job.start_ns, end_ns=job.end_ns, nprocs=job.nprocs, jobid=_jobid(job),
                          exe=_exe_line(first), metadata=md, mounts=mounts)
        sizes[side] = write(paths[side], djob, names, mods)
        if side == "app":
            nrec = sum(len(m.records) for m in mods.values())
    return Exported(paths["app"], paths["fs"], sizes["app"], sizes["fs"], nrec, len(job.left_out))
