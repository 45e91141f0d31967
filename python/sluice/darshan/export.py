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

import numpy as np

from sluice import __version__
from sluice.darshan import layout as L
from sluice.darshan.heatmap import HEATMAP
from sluice.darshan.heatmap import KINDS as HEATMAP_KINDS
from sluice.darshan.heatmap import NAMES as HEATMAP_NAMES
from sluice.darshan.heatmap import records as heatmap_records
from sluice.darshan.mapping import SLUICE_MODULES, to_darshan_columns, visible_rows
from sluice.darshan.recid import record_id, record_ids
from sluice.darshan.writer import DarshanJob, ModuleData, write
from sluice.logfmt import Log
from sluice.report.model import SIDES
from sluice.report.pattern import log_mounts, mount_of
from sluice.report.tables import Table, merge_tables

OTHER_FILES = "<other files>"


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


@dataclass
class RankTable:
    """Every rank's records merged into a row per rank and file (all the
    modules of the file in one row, each module's counters its own
    columns), timestamps from the job's start: one Table per side."""
    keys: list[tuple[int, str]]             # row -> (rank, path)
    tables: dict[str, Table]                # "app", "fs"
    ranks: np.ndarray                       # int64, the rank of each row
    paths: list[str]                        # the path of each row

    def get(self, side: str, rows: np.ndarray):
        """A getter for mapping.to_darshan_columns over `rows` of one side."""
        t = self.tables[side]
        sig_has: dict[str, np.ndarray] = {}

        def get(name: str):
            w = t.columns.get(name)
            if w is None:
                return None
            has = sig_has.get(name)
            if has is None:
                has = sig_has[name] = np.array([name in t.keyset(s).index for s in range(len(t.sigs))],
                                               dtype=bool)[t.sig]
            vals = (t.floats if w[0] else t.ints)[:, w[1]]
            return vals[rows], has[rows]
        return get

    def has_module(self, prefix: str) -> np.ndarray:
        """Which rows hold a record of the module whose counters start with prefix_."""
        t = self.tables["app"]
        by_sig = np.array([any(k.startswith(prefix + "_") for k in t.keyset(s).keys) for s in range(len(t.sigs))],
                          dtype=bool)
        return by_sig[t.sig]


def rank_table(job: RankedJob) -> RankTable:
    keys: dict[tuple[int, str], int] = {}
    ordered = sorted(job.logs, key=lambda x: (x.start_ns, x.pid))
    tables = merge_tables(ordered, job.start_ns, lambda l, path: keys.setdefault((job.rank_of[id(l)], path),
                                                                                  len(keys)), {})
    ks = list(keys)
    return RankTable(ks, tables, np.array([r for r, _ in ks], dtype=np.int64), [p for _, p in ks])


def _shared_table(job: RankedJob, paths: list[str]) -> tuple[dict[str, Table], dict[str, int]]:
    """The records of files every rank used merged into a row per file, a
    rank at a time in rank order, as Darshan reduces them; the other records
    go to row 0, which is not used."""
    row = {p: i + 1 for i, p in enumerate(paths)}
    ordered = sorted(job.logs, key=lambda x: (job.rank_of[id(x)], x.start_ns, x.pid))
    return merge_tables(ordered, job.start_ns, lambda l, path: row.get(path, 0), {}), row


def _variance(xs: list[float]) -> float:
    mean = sum(xs) / len(xs)
    return sum((x - mean) ** 2 for x in xs) / len(xs)


def _file_of_dataset(module: int, path: str) -> str:
    """The file of an H5D record's name "<file>:<dataset path>", or of a
    PNETCDF_VAR record's "<file>:<variable>"."""
    i = path.find(":/") if module == L.H5D else path.rfind(":")
    return path[:i] if i > 0 else path


def _packed(module: int, ids: np.ndarray, ranks: np.ndarray, paths: list[str], ints: np.ndarray,
            floats: np.ndarray) -> bytes:
    """Records of a module as the log stores them (layout.record_struct), all at once."""
    fields = [("id", "<u8"), ("rank", "<i8")]
    if module in L.WITH_FILE_ID:
        fields.append(("file", "<u8"))
    fields += [("ints", "<i8", (ints.shape[1],)), ("floats", "<f8", (floats.shape[1],))]
    recs = np.zeros(len(ids), dtype=np.dtype(fields))
    recs["id"], recs["rank"], recs["ints"], recs["floats"] = ids, ranks, ints, floats
    if module in L.WITH_FILE_ID:
        recs["file"] = record_ids([_file_of_dataset(module, p) for p in paths])
    assert recs.dtype.itemsize == L.record_struct(module).size
    return recs.tobytes()


def _reduced(module: int, ints: np.ndarray, floats: np.ndarray, parts: list[tuple[int, float, float]]) -> None:
    """The fastest and slowest rank, with their bytes and times, and the
    variances, of a file every rank used (parts: rank, time in the module's
    calls, bytes), set in its reduced record's counters."""
    times = [(t, r, b) for r, t, b in parts]
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


def _rank_parts(rt: RankTable, side: str, prefix: str, rows: np.ndarray) -> list[tuple[int, float, float]]:
    """(rank, seconds in the module's calls, bytes) of each of `rows`."""
    get = rt.get(side, rows)

    def total(names: list[str]) -> np.ndarray:
        out = np.zeros(len(rows))
        for n in names:
            got = get(n)
            if got is not None:
                out += got[0]
        return out

    t = total([f"{prefix}_F_{k}_TIME" for k in ("READ", "WRITE", "META")])
    b = total([f"{prefix}_BYTES_{k}" for k in ("READ", "WRITTEN")])
    return list(zip(rt.ranks[rows].tolist(), t.tolist(), b.tolist()))


def modules_of(job: RankedJob, rt: RankTable, side: str, per_rank: bool, ids: np.ndarray) -> \
        tuple[dict[int, ModuleData], dict[int, str]]:
    """Each module's records of one side: a record per rank and file, or,
    for a file every rank of an MPI job used (unless per_rank), one rank -1
    record reduced over the ranks. ids: the record id of each row's path."""
    everyone = job.mpi and not per_rank and job.nprocs > 1
    found = []
    for mid, prefix in sorted(SLUICE_MODULES.items()):
        rows = np.flatnonzero(rt.has_module(prefix))
        if not len(rows):
            continue
        ints, floats = to_darshan_columns(mid, rt.get(side, rows), len(rows))
        vis = visible_rows(ints, mid)
        shared: dict[str, np.ndarray] = {}
        if everyone:
            by_path: dict[str, list[int]] = defaultdict(list)
            for i, r in enumerate(rows.tolist()):
                by_path[rt.paths[r]].append(i)
            shared = {p: np.array(idx) for p, idx in by_path.items()
                      if len(set(rt.ranks[rows[idx]].tolist())) == job.nprocs}
        found.append((mid, prefix, rows, ints, floats, vis, shared))
    every = sorted({p for *_, shared in found for p in shared})
    tables, srow = _shared_table(job, every) if every else ({}, {})
    mods: dict[int, ModuleData] = {}
    names: dict[int, str] = {}
    for mid, prefix, rows, ints, floats, vis, shared in found:
        m = ModuleData()
        for p, idx in sorted(shared.items()):
            if not vis[idx].any():
                continue
            sints, sfloats = to_darshan_columns(mid, RankTable([], tables, np.zeros(0), []).get(side, np.array([srow[p]])),
                                                1)
            _reduced(mid, sints[0], sfloats[0], _rank_parts(rt, side, prefix, rows[idx]))
            rid = ids[rows[idx[:1]]]
            m.records.append(_packed(mid, rid, np.array([-1]), [p], sints, sfloats))
            m.count += 1
            m.partial = m.partial or p == OTHER_FILES
            names[int(rid[0])] = p
        alone = vis.copy()
        for idx in shared.values():
            alone[idx] = False
        keep = np.flatnonzero(alone)
        paths = [rt.paths[r] for r in rows[keep].tolist()]
        order = np.lexsort((np.array(paths, dtype=object), rt.ranks[rows[keep]])) if len(keep) else keep
        keep, paths = keep[order], [paths[i] for i in order.tolist()]
        if len(keep):
            rid = ids[rows[keep]]
            m.records.append(_packed(mid, rid, rt.ranks[rows[keep]], paths, ints[keep], floats[keep]))
            m.count += len(keep)
            m.partial = m.partial or OTHER_FILES in paths
            names.update(zip(rid.tolist(), paths))
        if m.count:
            mods[mid] = m
    return mods, names


def heatmap_module(job: RankedJob, rt: RankTable, side: str) -> tuple[dict[int, ModuleData], dict[int, str]]:
    """Darshan's HEATMAP records of one side: per rank and module (POSIX,
    MPI-IO, STDIO), bytes read and written per time bin."""
    ranks = sorted(set(rt.ranks.tolist()))
    index = np.searchsorted(np.array(ranks, dtype=np.int64), rt.ranks)
    per_module = {}
    for module in HEATMAP_NAMES:
        rows = np.flatnonzero(rt.has_module(module))
        if not len(rows):
            continue
        get = rt.get(side, rows)

        def column(name: str) -> np.ndarray:
            got = get(f"{module}_{name}")
            return np.zeros(len(rows)) if got is None else got[0].astype(np.float64)

        per_module[module] = {kind: (index[rows], column(nbytes), column(f"{t}_START_TIMESTAMP"),
                                     column(f"{t}_END_TIMESTAMP"))
                              for kind, nbytes, t in HEATMAP_KINDS}
    recs, names = heatmap_records(ranks, per_module, (job.end_ns - job.start_ns) / 1e9)
    if not recs:
        return {}, {}
    return {HEATMAP: ModuleData(records=recs, count=len(recs))}, names


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
            if mid is None or op > 1:   # (DXT holds reads and writes; opens, closes, ... are sluice's own)
                continue
            w, r, _ = segs.setdefault((mid, path, rank), ([], [], l.info.get("host", "")))
            (w if op else r).append(L.DXT_SEGMENT.pack(off, n, shift + t0 / 1e9, shift + t1 / 1e9))
    mods: dict[int, ModuleData] = {}
    names: dict[int, str] = {}
    for (mid, path, rank), (w, r, host) in sorted(segs.items()):
        head = L.DXT_RECORD.pack(record_id(path), rank, 0, host.encode()[:63], len(w), len(r))
        m = mods.setdefault(mid, ModuleData())
        m.records.append(head + b"".join(w) + b"".join(r))
        m.count += 1
        names[record_id(path)] = path
    return mods, names


def lustre_module(job: RankedJob, rt: RankTable) -> tuple[dict[int, ModuleData], dict[int, str]]:
    """Darshan's LUSTRE module for the files on Lustre mounts whose layout the
    runtime read at open (POSIX_STRIPE_SIZE, ...): one record per file (rank
    -1 when several ranks opened it), its first component as sluice reads it
    (stripe size and count, RAID0, the whole file); its OST ids are -1:
    sluice does not read them."""
    t = rt.tables["app"]
    size, count = t.column("POSIX_STRIPE_SIZE"), t.column("POSIX_STRIPE_COUNT")
    mounts = log_mounts(job.logs)
    by_file: dict[str, list[int]] = defaultdict(list)
    for i in np.flatnonzero(size > 0).tolist():
        m = mount_of(rt.paths[i], mounts)
        if m and m[1] == "lustre":
            by_file[rt.paths[i]].append(i)
    mods: dict[int, ModuleData] = {}
    names: dict[int, str] = {}
    for path, rows in sorted(by_file.items()):
        rows.sort(key=lambda i: int(rt.ranks[i]))
        ranks = {int(rt.ranks[i]) for i in rows}
        rank = ranks.pop() if len(ranks) == 1 else -1
        first = rows[0]     # the lowest rank's layout
        n = int(count[first])
        stripes = max(0, n)
        comp = L.LUSTRE_COMP.pack(int(size[first]), n, 1, 0, 0, -1, 0, b"")
        osts = b"".join(struct.pack("<q", -1) for _ in range(stripes))
        m = mods.setdefault(L.LUSTRE, ModuleData())
        m.records.append(L.LUSTRE_HEAD.pack(record_id(path), rank, 1, stripes) + comp + osts)
        m.count += 1
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


def job_uid(job: RankedJob) -> int:
    """The user who ran the job: the uid its first rank's log names (PROCESS
    key "uid"), else the owner of that log file, else this user."""
    uid = job.first.info.get("uid", "")
    if uid.isdigit():
        return int(uid)
    try:
        return os.stat(job.first.path).st_uid
    except OSError:
        return os.getuid()


def export_job(job_id: str, logs: list[Log], out_dir: Path, per_rank: bool = False) -> Exported:
    job = assign_ranks(job_id, logs)
    if not job.logs:
        from sluice.errors import UserError

        raise UserError(f"job {job_id}: no process with an MPI rank to export")
    rt = rank_table(job)
    ids = record_ids(rt.paths)
    first = job.first
    stem = log_stem(job)
    paths = {"app": out_dir / f"{stem}.darshan", "fs": out_dir / f"{stem}.fs.darshan"}
    mounts = _mounts(job.logs, set(rt.paths))
    lus, lus_names = lustre_module(job, rt)    # the files' layout: the same in both views
    policies = list(dict.fromkeys(l.info["policy"] for l in job.logs if l.info.get("policy")))
    sizes = {}
    nrec = 0
    for side in SIDES:
        mods, names = modules_of(job, rt, side, per_rank, ids)
        heat, heat_names = heatmap_module(job, rt, side)
        mods.update(heat)
        names.update(heat_names)
        if side == "app":   # the trace is of the calls the application made
            dxt, dxt_names = dxt_modules(job)
            mods.update(dxt)
            names.update(dxt_names)
        mods.update(lus)
        names.update(lus_names)
        md = {"lib_ver": f"sluice-{__version__}", "sluice_view": side, "sluice_job_id": job.job_id,
              "sluice_version": __version__,
              "sluice_mode": ",".join(sorted({l.info.get("mode", "?") for l in job.logs})),
              "sluice_host": ",".join(sorted({l.info.get("host", "?") for l in job.logs})),
              ("sluice_fs_log" if side == "app" else "sluice_app_log"): paths["fs" if side == "app" else "app"].name}
        if job.left_out:
            md["sluice_processes_left_out"] = str(len(job.left_out))
        if policies:
            md["sluice_policy"] = " | ".join(policies)
        djob = DarshanJob(uid=job_uid(job), start_ns=job.start_ns, end_ns=job.end_ns, nprocs=job.nprocs,
                          jobid=_jobid(job), exe=_exe_line(first), metadata=md, mounts=mounts)
        sizes[side] = write(paths[side], djob, names, mods)
        if side == "app":
            nrec = sum(m.count for mid, m in mods.items() if mid != HEATMAP)
    return Exported(paths["app"], paths["fs"], sizes["app"], sizes["fs"], nrec, len(job.left_out))
