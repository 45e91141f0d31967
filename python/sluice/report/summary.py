"""What a Darshan user finds at the top of a job summary, from a sluice job:
who ran what (command line, user, start and end), the modes and --policy
rules in effect, how processes ended, the logs that could not be read
whole, the time in each module's calls, files by how they were used
(read-only, write-only, read-write) and totals per directory and per mount.

The text, JSON and HTML reports all take these figures from here.
"""

from __future__ import annotations

import os
import posixpath
import pwd
import re
import time
from collections.abc import Mapping

import numpy as np

from sluice.report.model import OP_COUNTERS, SHARED, Job, zero_counters
from sluice.report.pattern import log_mounts, mount_of
from sluice.report.tables import column_values, merge_tables

SIDES = ("app", "fs")

# The end reasons of a process that was not ended by a signal (logfmt.END_REASONS).
NOT_SIGNALS = frozenset({"exit", "_exit", "exec"})

# Seconds in each module's calls, Darshan's "I/O cost" per module: read,
# write and metadata time counters of each (HDF5: the file and dataset
# modules; PnetCDF: the file module's metadata and wait time, the
# variables' reads and writes).
MODULE_TIMES: list[tuple[str, dict[str, tuple[str, ...]]]] = [
    ("POSIX", {"read": ("POSIX_F_READ_TIME",), "write": ("POSIX_F_WRITE_TIME",), "meta": ("POSIX_F_META_TIME",)}),
    ("STDIO", {"read": ("STDIO_F_READ_TIME",), "write": ("STDIO_F_WRITE_TIME",), "meta": ("STDIO_F_META_TIME",)}),
    ("MPI-IO", {"read": ("MPIIO_F_READ_TIME",), "write": ("MPIIO_F_WRITE_TIME",), "meta": ("MPIIO_F_META_TIME",)}),
    ("HDF5", {"read": ("H5D_F_READ_TIME",), "write": ("H5D_F_WRITE_TIME",),
              "meta": ("H5F_F_META_TIME", "H5D_F_META_TIME")}),
    ("PnetCDF", {"read": ("PNETCDF_VAR_F_READ_TIME",), "write": ("PNETCDF_VAR_F_WRITE_TIME",),
                 "meta": ("PNETCDF_FILE_F_META_TIME", "PNETCDF_FILE_F_WAIT_TIME", "PNETCDF_VAR_F_META_TIME")}),
]

# A file's calls, every module of it: how it was used.
READ_CALLS = ("POSIX_READS", "STDIO_READS", "MPIIO_INDEP_READS", "MPIIO_COLL_READS", "MPIIO_SPLIT_READS",
              "MPIIO_NB_READS")
WRITE_CALLS = ("POSIX_WRITES", "STDIO_WRITES", "MPIIO_INDEP_WRITES", "MPIIO_COLL_WRITES", "MPIIO_SPLIT_WRITES",
               "MPIIO_NB_WRITES", "MPIIO_SHARED_WRITES")
ACCESS_KINDS = ("read-only", "write-only", "read-write", "neither")


def _column(files: list, side: str, names: tuple[str, ...]) -> np.ndarray:
    """The sum of `names` for every file (one side), as a float array."""
    maps = [getattr(f, side) for f in files]
    total = np.zeros(len(files))
    for n in names:
        total += np.asarray(column_values(maps, n), dtype=np.float64)
    return total


def _moved(files: list, side: str, kind: str) -> np.ndarray:
    """Bytes read (kind "READ") or written ("WRITTEN") of every file, as
    FileTotals.bytes() counts them: MPI-IO's bytes travel through POSIX
    calls that are recorded too (the larger of the two), stdio's apart."""
    posix, mpiio, stdio = (_column(files, side, (f"{m}_BYTES_{kind}",)) for m in ("POSIX", "MPIIO", "STDIO"))
    return np.maximum(posix, mpiio) + stdio


def utc(ns: int) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(ns / 1e9)) if ns else "?"


def _ordered(job: Job) -> list:
    """The job's processes in start order (a Darshan log's shared records, no process, left out)."""
    return sorted((l for l in job.logs if SHARED not in l.info), key=lambda l: (l.start_ns, l.pid))


def user_of(job: Job) -> dict:
    """The user who ran the job: the uid the logs name (PROCESS key "uid";
    a Darshan log's job record), else the owner of the first log file; the
    name is this machine's for that uid, "" when it has none."""
    procs = _ordered(job) or job.logs
    uids = [l.info.get("uid", "") for l in procs]
    named = [u for u in uids if u.isdigit()]
    if named:
        uid, source = int(named[0]), "log"
    else:
        try:
            uid, source = os.stat(procs[0].path).st_uid, "log file owner"
        except OSError:
            return {"uid": None, "name": "", "from": "unknown"}
    try:
        name = pwd.getpwuid(uid).pw_name
    except (KeyError, OverflowError):
        name = ""
    return {"uid": uid, "name": name, "from": source}


def one_line(s: str) -> str:
    """Text for one line of the text report: control characters as escapes (a
    command line given to `python -c` holds newlines)."""
    return s if s.isprintable() else "".join(c if c.isprintable() else repr(c)[1:-1] for c in s)


def user_text(u: Mapping) -> str:
    if u["uid"] is None:
        return "?"
    text = f"{u['name']} (uid {u['uid']})" if u["name"] else f"uid {u['uid']}"
    return text + (" (owner of the log files)" if u["from"] == "log file owner" else "")


def commands(job: Job) -> list[str]:
    """The distinct command lines of the job's processes, in start order
    (the first is the job's own: the launcher or the first program)."""
    out: dict[str, None] = {}
    for l in _ordered(job) or job.logs:
        out.setdefault(l.info.get("cmdline") or l.info.get("exe", "?"), None)
    return list(out)


def distinct(job: Job, key: str) -> list[str]:
    """The distinct non-empty values of a PROCESS key, in start order."""
    out: dict[str, None] = {}
    for l in _ordered(job) or job.logs:
        v = l.info.get(key, "")
        if v:
            out.setdefault(v, None)
    return list(out)


def runtime_left_out(job: Job) -> int:
    """Calls on the interpreter's own files (site-packages, .pyc, ...) that
    the processes left out of their records (--include-runtime keeps them)."""
    total = 0
    for l in job.logs:
        v = l.info.get("runtime_left_out", "0")
        total += int(v) if v.isdigit() else 0
    return total


def signal_rows(job: Job) -> list[dict]:
    """One row per process that a signal ended, in start order."""
    return [{"signal": l.end_reason, "pid": l.pid, "rank": l.rank, "host": l.info.get("host", ""),
             "cmdline": l.info.get("cmdline") or l.info.get("exe", "")}
            for l in _ordered(job) if l.end_reason not in NOT_SIGNALS]


def signals_text(rows: list[dict], most: int = 8) -> str:
    """'SIGSEGV: 1 (pid 4242); SIGTERM: 2 (ranks 0, 1)', the first `most` processes of each named."""
    by: dict[str, list[dict]] = {}
    for r in rows:
        by.setdefault(r["signal"], []).append(r)
    parts = []
    for sig, rs in by.items():
        ranked = all(r["rank"] >= 0 for r in rs)
        ids = ", ".join(str(r["rank"] if ranked else r["pid"]) for r in rs[:most])
        if len(rs) > most:
            ids += f" and {len(rs) - most:,} more"
        what = ("rank" if ranked else "pid") + ("s" if len(rs) > 1 else "")
        parts.append(f"{sig}: {len(rs):,} ({what} {ids})")
    return "; ".join(parts)


def damaged_rows(job: Job) -> list[dict]:
    """The job's logs that could not be read whole: the log, its problems
    and whether what could be read of it is in the report."""
    return [{"log": d.path, "problems": list(d.problems), "used": d.used} for d in job.damaged]


def damaged_text(row: Mapping) -> str:
    tail = "" if row["used"] else "; nothing of it is used"
    return f"{row['log']}: {'; '.join(row['problems'])}{tail}"


def module_times(job: Job) -> list[dict]:
    """Seconds in each module's calls, summed over processes, for the
    modules the job used: read, write, metadata and their total, each side."""
    rows = []
    for module, kinds in MODULE_TIMES:
        row: dict = {"module": module}
        for side in SIDES:
            c = getattr(job, side)
            secs = {k: float(sum(c.get(n, 0.0) for n in names)) for k, names in kinds.items()}
            secs["total"] = secs["read"] + secs["write"] + secs["meta"]
            row[side] = secs
        if row["app"]["total"] or row["fs"]["total"]:
            rows.append(row)
    return rows


def access_kinds(job: Job) -> dict[str, dict]:
    """The job's files by how they were used (application side, every
    module): read-only, write-only, read-write, neither (opened, stat'ed,
    ...: no byte moved); per kind the number of files and their bytes."""
    files = job.files
    moved = {(side, k): _moved(files, side, k) for side in SIDES for k in ("READ", "WRITTEN")}
    rd = moved["app", "READ"] + _column(files, "app", READ_CALLS)
    wr = moved["app", "WRITTEN"] + _column(files, "app", WRITE_CALLS)
    kinds = {"read-only": (rd > 0) & (wr == 0), "write-only": (rd == 0) & (wr > 0),
             "read-write": (rd > 0) & (wr > 0), "neither": (rd == 0) & (wr == 0)}
    out = {}
    for kind, sel in kinds.items():
        entry = {"files": int(sel.sum())}
        for side in SIDES:
            entry[f"{side}_bytes_read"] = int(moved[side, "READ"][sel].sum())
            entry[f"{side}_bytes_written"] = int(moved[side, "WRITTEN"][sel].sum())
        out[kind] = entry
    return out


def _group_rows(job: Job, keys: list[str]) -> dict[str, dict]:
    """Files grouped by key (one per file, "" leaves it out): per group the
    number of files and, per side, bytes read, bytes written and operations."""
    files = job.files
    by_side = {side: (_moved(files, side, "READ"), _moved(files, side, "WRITTEN"),
                      np.array([f.ops(side) for f in files], dtype=np.float64)) for side in SIDES}
    uniq, inv = np.unique(np.array(keys, dtype=object), return_inverse=True) if keys else ([], np.zeros(0, int))
    out: dict[str, dict] = {}
    counts = np.bincount(inv, minlength=len(uniq))
    sums = {side: [np.bincount(inv, weights=col, minlength=len(uniq)) for col in cols]
            for side, cols in by_side.items()}
    for i, key in enumerate(uniq):
        if not key:
            continue
        row = {"files": int(counts[i])}
        for side in SIDES:
            r, w, o = (s[i] for s in sums[side])
            row.update({f"{side}_bytes_read": int(r), f"{side}_bytes_written": int(w), f"{side}_ops": int(o)})
        out[str(key)] = row
    return out


def directory_rows(job: Job) -> list[dict]:
    """Per directory holding recorded files (each file under its own
    directory, not its parents'): files, bytes and operations of each side;
    most bytes first."""
    keys = [posixpath.dirname(f.path) if f.path.startswith("/") else "" for f in job.files]
    rows = [{"directory": d, **r} for d, r in _group_rows(job, keys).items()]
    return sorted(rows, key=lambda r: (-(r["app_bytes_read"] + r["app_bytes_written"]), -r["app_ops"],
                                       r["directory"]))


def mount_summary(job: Job) -> list[dict]:
    """Per mount the logs name: its point and type, and of the recorded
    files under it, how many, their bytes and operations on each side (in
    the order the logs name the mounts)."""
    mounts = log_mounts(job.logs)
    keys = []
    for f in job.files:
        m = mount_of(f.path, mounts)
        keys.append(m[0] if m else "")
    per = _group_rows(job, keys)
    zero = {"files": 0, **{f"{s}_{k}": 0 for s in SIDES for k in ("bytes_read", "bytes_written", "ops")}}
    return [{"point": p, "type": t, **per.get(p, zero)} for p, t in mounts]


def natural_key(name: str) -> tuple:
    """node2 before node10."""
    return tuple(int(t) if t.isdigit() else t for t in re.split(r"(\d+)", name))


def ranks_text(ranks: list[int]) -> str:
    """0-3,8,10-11: sorted ranks as runs."""
    runs: list[list[int]] = []
    for r in sorted(set(ranks)):
        if runs and r == runs[-1][1] + 1:
            runs[-1][1] = r
        else:
            runs.append([r, r])
    return ",".join(str(a) if a == b else f"{a}-{b}" for a, b in runs)


def host_rows(job: Job) -> list[dict]:
    """Per host (node) the job ran on, in name order: its processes, its MPI
    ranks, and per side the bytes read and written and the operations of
    its processes (a log shared by all ranks counts on rank 0's host)."""
    hosts = sorted({l.info.get("host", "") for l in job.logs}, key=natural_key)
    index = {h: i for i, h in enumerate(hosts)}
    if len(hosts) == 1:
        # one host: its row is the job's totals (no second pass over the records)
        def column(side: str, name: str) -> np.ndarray:
            return np.array([float(getattr(job, side).get(name, 0))])
    else:
        tables = merge_tables(job.logs, None, lambda l, _path: index[l.info.get("host", "")],
                              zero_counters(job.logs), nrows=len(hosts))

        def column(side: str, name: str) -> np.ndarray:
            return tables[side].column(name)
    moved = {side: {kind: np.zeros(len(hosts)) for kind in ("READ", "WRITTEN")} for side in SIDES}
    ops = {side: np.zeros(len(hosts)) for side in SIDES}
    for side in SIDES:
        for kind in ("READ", "WRITTEN"):
            moved[side][kind] = (np.maximum(column(side, f"POSIX_BYTES_{kind}"), column(side, f"MPIIO_BYTES_{kind}"))
                                 + column(side, f"STDIO_BYTES_{kind}"))
        ops[side] = sum((column(side, k) for k in OP_COUNTERS), np.zeros(len(hosts)))
    rows = []
    for i, h in enumerate(hosts):
        mine = [l for l in job.logs if l.info.get("host", "") == h and SHARED not in l.info]
        row = {"host": h, "processes": len(mine), "ranks": sorted({l.rank for l in mine if l.rank >= 0})}
        for side in SIDES:
            row.update({f"{side}_bytes_read": int(moved[side]["READ"][i]),
                        f"{side}_bytes_written": int(moved[side]["WRITTEN"][i]),
                        f"{side}_ops": int(ops[side][i])})
        rows.append(row)
    return rows


def summary_json(job: Job) -> dict:
    """The figures of this module as `sluice report --json` gives them."""
    cmds = commands(job)
    return {
        "command": cmds[0] if cmds else "",
        "commands": cmds,
        "user": user_of(job),
        "start_utc": utc(job.start_ns),
        "end_utc": utc(job.end_ns),
        "start_ns": job.start_ns,
        "end_ns": job.end_ns,
        "modes": distinct(job, "mode"),
        "policies": distinct(job, "policy"),
        "signals": signal_rows(job),
        "runtime_calls_left_out": runtime_left_out(job),
        "damaged_logs": damaged_rows(job),
        "module_times": module_times(job),
        "file_access": access_kinds(job),
        "directories": directory_rows(job),
        "hosts": host_rows(job),
    }


__all__ = ["summary_json", "module_times", "access_kinds", "directory_rows", "mount_summary", "signal_rows",
           "signals_text", "damaged_rows", "damaged_text", "commands", "user_of", "user_text", "distinct",
           "ACCESS_KINDS"]
