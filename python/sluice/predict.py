"""``sluice predict``: what each mode would make reach the file system for a
job, from its profile-mode logs, and what that would cost on a file system
described by a profile (``sluice bench calibrate``; docs/predict.md).

Per file, the fs side the mode would leave, in the counter names of
``sluice report --json`` (so that a prediction and a measurement compare
key by key), then the I/O time those calls and bytes take on the profiled
file system at the job's concurrency. The modes:

- ``profile``: the fs side as logged (what the kernel saw);
- ``buffer``: writes and reads coalesced into ``--buffer-size`` units, as
  buffer mode's window and read-ahead do (each close and fsync writes out
  what is held; a write that does not continue the previous one starts a
  piece of its own; a write of a unit or more goes straight through; a
  read that does not continue the previous one goes as asked, a run of
  consecutive ones is read ahead in windows growing to ``--readahead``;
  an O_APPEND descriptor's first write asks the file's size); every other
  call as logged.

- ``stage``: a file the job creates or truncates for writing (the
  open-flag counters, ``POSIX_OPENS_CREATE``/``_TRUNC`` and their STDIO
  twins) lives on the node's tier for the whole job: what the program does
  to it reaches the file system as its publish alone (one create, the
  final size in write units, a temporary name and a rename above one unit
  or over a file that stood), and the tier's own look-ups at its first
  creating open (the name; the directory, once per process, unless that
  process made it); a file the job removed is never published; every other
  file straight through, as logged;
- ``auto``: on a parallel file system, stage's files as stage, those whose
  writes are all at least ``--auto-large`` straight through, every other
  file as buffer mode; on a file system of the node, as profile;
- ``acb``: a file MPI-IO writes gets the writes its aggregators would make
  at the close (acb_flush: each rank its own runs where they are large,
  else rounds of stripes dealt to one aggregator per node); every other
  call as logged.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sluice.advise.gain import calls_left
from sluice.autolarge import auto_large_of, log_interpolate
from sluice.bench.calibrate import random_reads, small_file_pages
from sluice.errors import UserError
from sluice.report.model import FileTotals, Job, per_process_app

UNIT = 4 << 20          # buffer mode's unit (--buffer-size)
READAHEAD = 4 << 20     # buffer mode's largest read-ahead window (--readahead)
MIN_FILL = 16 << 10     # its first fill: 4x the read, at least this
AUTO_LARGE = 1 << 20    # auto's first write that goes straight through (--auto-large)

# The metadata kinds of a file-system profile and the counters they cost
META_KINDS = {"open": ("POSIX_OPENS", "STDIO_OPENS"), "stat": ("POSIX_STATS",), "rename": ("POSIX_RENAMES",),
              "unlink": ("POSIX_UNLINKS",), "mkdir": ("POSIX_MKDIRS",), "rmdir": ("POSIX_RMDIRS",)}
PREDICTED = ("POSIX_OPENS", "POSIX_READS", "POSIX_WRITES", "POSIX_STATS", "POSIX_SEEKS", "POSIX_RENAMES",
             "POSIX_UNLINKS", "POSIX_MKDIRS", "POSIX_RMDIRS", "POSIX_FSYNCS", "POSIX_FDSYNCS", "POSIX_BYTES_READ",
             "POSIX_BYTES_WRITTEN", "POSIX_CONSEC_READS", "POSIX_OPENS_WRITE", "POSIX_OPENS_CREATE", "STDIO_OPENS",
             "STDIO_READS", "STDIO_WRITES", "STDIO_BYTES_READ", "STDIO_BYTES_WRITTEN", "STDIO_OPENS_WRITE",
             "STDIO_OPENS_CREATE")
SMALL = 4096            # the calibrated per-call figures' request size
MODES = ("profile", "buffer", "stage", "auto", "acb")
# acb's engine (src/acb/acb.h, docs/acb.md): the file-domain unit
# (--acb-stripe-size), an aggregator's largest write, its share of a round
# (cb_buffer_size), and the run size above which each rank writes its own
ACB_STRIPE = 1 << 20
ACB_WRITE = 16 << 20
ACB_BUFFER = 16 << 20
ACB_DIRECT = 64 << 10

# What a file-system type charges when no profile is given: round numbers
# on the safe side (a parallel file system's metadata calls each a round
# trip to a loaded server; a node's own disk, microseconds).
BUILTIN = {
    "local": {"latency_s": {"open": 5e-6, "stat": 3e-6, "rename": 2e-5, "unlink": 1e-5, "mkdir": 2e-5,
                            "rmdir": 2e-5, "create": 2e-5, "create_written": 3e-5},
              "write_MBps": 500.0, "read_MBps": 1000.0, "small_write_s": 5e-6, "small_read_s": 3e-6,
              "random_read_s": 1e-4, "fsync_s": 5e-4},
    "parallel": {"latency_s": {"open": 5e-4, "stat": 3e-4, "rename": 1e-3, "unlink": 1e-3, "mkdir": 1e-3,
                               "rmdir": 1e-3, "create": 1e-3, "create_written": 2e-3},
                 "write_MBps": 500.0, "read_MBps": 500.0, "small_write_s": 1e-4, "small_read_s": 1e-4,
                 "random_read_s": 5e-4, "fsync_s": 2e-3},
}
LOCAL_TYPES = {"ext2", "ext3", "ext4", "xfs", "btrfs", "tmpfs", "ramfs", "zfs", "f2fs", "overlay"}


def _v(d: Mapping[str, float], *names: str) -> float:
    return sum(d.get(n) or 0 for n in names)


def _small_writes(app: Mapping[str, float], unit: int) -> float:
    """Writes shorter than a unit (from the size buckets: those below 4 MiB
    when the unit is 4 MiB)."""
    buckets = [("0_100", 100), ("100_1K", 1 << 10), ("1K_10K", 10 << 10), ("10K_100K", 100 << 10),
               ("100K_1M", 1 << 20), ("1M_4M", 4 << 20), ("4M_10M", 10 << 20), ("10M_100M", 100 << 20),
               ("100M_1G", 1 << 30)]
    return sum(_v(app, f"POSIX_SIZE_WRITE_{b}") for b, top in buckets if top <= unit)


def buffer_writes(app: Mapping[str, float], fs: Mapping[str, float], unit: int = UNIT) -> int:
    """The write calls buffer mode would leave of a file's logged ones."""
    calls = _v(fs, "POSIX_WRITES")
    if calls <= 0:
        return 0
    smalls = min(calls, _small_writes(app, unit))
    flushes = _v(app, "POSIX_OPENS") + _v(app, "POSIX_FSYNCS", "POSIX_FDSYNCS")
    pieces = max(1.0, _v(app, "POSIX_WRITES") - _v(app, "POSIX_CONSEC_WRITES"))
    return calls_left(calls, smalls, _v(fs, "POSIX_BYTES_WRITTEN"), flushes, unit, pieces)


def buffer_reads(app: Mapping[str, float], fs: Mapping[str, float], readahead: int = READAHEAD) -> int:
    """The read calls buffer mode would leave: each read that does not
    continue the previous one goes as asked, and each run of consecutive
    reads after it is read ahead in windows of 4x the read (at least 16
    KiB), doubling up to `readahead`."""
    calls = _v(fs, "POSIX_READS")
    if calls <= 0:
        return 0
    consec = min(_v(app, "POSIX_CONSEC_READS"), calls)
    runs = max(1.0, calls - consec)
    size = _v(fs, "POSIX_BYTES_READ") / calls
    if size >= readahead or consec == 0:
        return int(calls)
    per_run = consec / runs * size           # bytes a run reads after its first read
    fills, window, left = 0, max(MIN_FILL, 4 * size), per_run
    while left > 0 and fills < 64:
        fills += 1
        left -= window
        window = min(readahead, 2 * window)
    if left > 0:
        fills += math.ceil(left / readahead)
    return int(min(calls, runs * (1 + fills)))


def stdio_writes(fs: Mapping[str, float], app: Mapping[str, float], unit: int = UNIT) -> int:
    """A stream's kernel writes under buffer mode: its glibc buffer is one
    unit, so one write per unit of bytes, and one at each flush."""
    calls = _v(fs, "STDIO_WRITES")
    if calls <= 0:
        return 0
    nbytes = _v(fs, "STDIO_BYTES_WRITTEN")
    flushes = _v(app, "STDIO_OPENS") + _v(app, "STDIO_FLUSHES")
    return int(min(calls, max(math.ceil(nbytes / unit), flushes)))


def _stream_kernel_calls(ev: list[tuple[int, int, int]], buf: int) -> tuple[int, int]:
    """A stream's kernel writes and reads for its traced calls ev (op,
    offset, length; op -1 where one process's calls end) with a buffer of
    buf bytes, the way glibc moves them: a write reaches the kernel when
    the buffer fills, at a flush and at a close that find bytes held; a
    read takes what the buffer holds, then one direct read of whole
    buffers where the rest asks that much, then one fill; a read away from
    where the last one ended (a seek) finds the buffer dropped; a read
    that returned nothing asked the kernel once more (the end)."""
    writes = reads = 0
    pending = held = 0   # bytes waiting to be written; bytes the read buffer still holds
    end = -1
    for op, off, n in ev + [(-1, -1, 0)]:
        if op == 1:
            pending += n
            writes += pending // buf
            pending %= buf
        elif op == 0:
            if off >= 0 and end >= 0 and off != end:
                held = 0
            end = off + n if off >= 0 else -1
            if n == 0:
                reads += 1
                held = 0
            elif n > held:
                need = n - held
                if need >= buf:
                    reads += 1
                    need %= buf
                if need:
                    reads += 1
                    held = buf - need
                else:
                    held = 0
            else:
                held -= n
        elif op in (3, 5, -1):   # a close, a flush, the end of a process's calls
            writes += pending > 0
            pending = 0
            if op != 5:
                held, end = 0, -1
    return writes, reads


def stdio_buffered(job: Job, unit: int = UNIT) -> dict[str, dict[str, float]]:
    """A stream's kernel reads and writes under buffer mode (a buffer of one
    unit), from the trace's stdio calls, whose order is what decides
    (_stream_kernel_calls). The trace holds what each read returned, not
    what it asked: a read that came back short at the end of the file made
    glibc ask again and find the end, unseen. Those are what the profile
    run made beyond the same calls with its own buffer (the file's block
    size), and are added to the unit's. path -> {"STDIO_WRITES",
    "STDIO_READS"}, for the files whose every process's trace is whole."""
    calls: dict[str, list[tuple[int, int, int]]] = {}
    cut: set[str] = set()
    for l in job.logs:
        t = l.trace
        if t is None:
            continue
        mine: dict[str, list[tuple[int, int, int]]] = {}
        for path, mod, op, off, n in zip(t.paths, t.module.tolist(), t.op.tolist(), t.offset.tolist(),
                                         t.length.tolist()):
            if mod == 2:
                mine.setdefault(path, []).append((op, off, n))
        for path, ev in mine.items():
            if t.dropped:
                cut.add(path)
            calls.setdefault(path, []).append((-1, -1, 0))   # (another process: a stream of its own)
            calls[path].extend(ev)
    totals = {f.path: f for f in job.files}
    out: dict[str, dict[str, float]] = {}
    for path, ev in calls.items():
        f = totals.get(path)
        if path in cut or f is None:
            continue
        writes, reads = _stream_kernel_calls(ev, unit)
        block = int(_v(f.fs, "POSIX_FILE_ALIGNMENT")) or 4096
        unseen = max(0, int(_v(f.fs, "STDIO_READS")) - _stream_kernel_calls(ev, block)[1])
        out[path] = {"STDIO_WRITES": float(writes), "STDIO_READS": float(reads + unseen)}
    return out


@dataclass
class FileSystem:
    """What the predicted calls cost: a calibrated profile's figures, or the
    built-in ones of a file-system type."""

    name: str
    latency_s: dict[str, float]
    rate_by_procs: dict[str, dict[int, float]] = field(default_factory=dict)
    write_MBps: float = 500.0
    read_MBps: float = 500.0
    small_write_s: float = 1e-4
    small_read_s: float = 1e-4
    random_read_s: float = 5e-4
    fsync_s: float = 1e-3
    calibrated: bool = False
    write_by_procs: dict[int, float] = field(default_factory=dict)
    read_by_procs: dict[int, float] = field(default_factory=dict)
    # a byte written into a stripe another process writes too costs this
    # many of one written apart (calibrate's shared_stripe: its slowdown,
    # over pieces of shared_unit bytes)
    shared_slowdown: float = 1.0
    shared_unit: int = 1 << 20
    # request size -> one write call's seconds, no fsync (calibrate's
    # write_call_s): a 64 KiB call costs more than its bytes at the large
    # stream's bandwidth (testbed: 4 KiB 94 us, 64 KiB several hundred)
    write_call_s: dict[int, float] = field(default_factory=dict)
    # the same while every core computes (calibrate's write_call_busy_s)
    write_call_busy_s: dict[int, float] = field(default_factory=dict)
    cpus: int = 0   # the calibrated machine's cores (0: not known)

    def write_fixed_s(self, size: float, busy: float = 0.0) -> float:
        """What one write of size bytes costs beyond its bytes at one
        stream's bandwidth: interpolated between the calibrated request
        sizes on a log scale (without them, the 4 KiB call's), and between
        an idle machine's figure and a busy one's by busy, the share of the
        cores the job's processes keep computing."""
        per_byte = self.byte_seconds(True, 1)
        if not self.write_call_s:
            return max(0.0, self.small_write_s - SMALL * per_byte)
        size = max(float(size), 1.0)
        t = log_interpolate(self.write_call_s, size)
        if busy > 0 and self.write_call_busy_s:
            t += busy * max(0.0, log_interpolate(self.write_call_busy_s, size) - t)
        return max(0.0, t - min(size, max(self.write_call_s)) * per_byte)


    @property
    def flush_s(self) -> float:
        """What a close after writes adds to a file's create and write: the
        client sends what it held (a new file written and closed, less an
        empty one's create and one small write)."""
        lat = self.latency_s
        if "create_written" not in lat:
            return 0.0
        return max(0.0, lat["create_written"] - lat.get("create", 0.0) - self.small_write_s)

    def call_seconds(self, kind: str, conc: int) -> float:
        """One call of a kind while conc processes make such calls at once:
        conc over the calibrated rate for that many (interpolated; beyond
        the largest measured, that rate: the server is saturated), else
        one latency."""
        rates = self.rate_by_procs.get(kind)
        if not rates:
            return self.latency_s.get(kind, 1e-4)
        rate = _interpolate(rates, conc)
        return conc / rate if rate > 0 else float("inf")

    def server_load(self, counts: Mapping[str, float], wall_s: float, conc: int) -> float:
        """How much of the metadata server's time a job's calls ask for:
        each kind's calls a second over the rate the server answers them
        at for conc processes (calibrated; else conc over one call's
        latency), added up. Above 1 the server is saturated: the calls
        queue, and what it delivers is the asked rate over this."""
        if wall_s <= 0:
            return 0.0
        load = 0.0
        for kind, counters in META_KINDS.items():
            n = _v(counts, *counters)
            if n:
                rates = self.rate_by_procs.get(kind)
                rate = _interpolate(rates, conc) if rates else conc / max(self.latency_s.get(kind, 1e-4), 1e-12)
                load += n / wall_s / rate
        return load

    def byte_seconds(self, write: bool, conc: int) -> float:
        """One byte of one of conc streams at once: they share the
        calibrated bandwidth of that many."""
        by = self.write_by_procs if write else self.read_by_procs
        bw = _interpolate(by, conc) if by else (self.write_MBps if write else self.read_MBps)
        return conc / (bw * 1e6)


def _interpolate(points: Mapping[int, float], x: int) -> float:
    pts = sorted(points.items())
    if x <= pts[0][0]:
        return pts[0][1]
    for (p0, r0), (p1, r1) in zip(pts, pts[1:]):
        if p0 <= x <= p1:
            return r0 + (r1 - r0) * (x - p0) / (p1 - p0)
    return pts[-1][1]


PAGE = 4096             # what the client caches a read in
CACHED_READ_S = 2e-6    # a read the client's cache answers: a system call and a copy (testbed: 1.2-2.5 us, bench/client_cache.py)


def distinct_pages(pages: float, reads: float) -> float:
    """How many of a file's pages reads at uniformly random pages touch
    (the rest find a page read before, in the client's cache)."""
    if pages <= 1 or reads <= 0:
        return min(reads, max(pages, 1.0))
    return pages * (1.0 - (1.0 - 1.0 / pages) ** reads)


def calibrated_first_read_s(profile: dict[str, Any], per_read: float) -> float:
    """calibrate's random_read_s is the average of its reads (up to 2,000
    4 KiB reads at random pages of a cold file of size/16 bytes), some of
    which find a page read before: what a read of a page not yet read costs."""
    size = (profile.get("settings") or {}).get("size")
    if not size:
        return per_read
    pages = small_file_pages(int(size))
    reads = random_reads(pages)
    return per_read * reads / distinct_pages(pages, reads)


def _calls(figs: Mapping[str, Mapping[str, float]] | None) -> dict[int, float]:
    """A profile's figures by request size, those measured (not NaN)."""
    return {int(q): r["median"] for q, r in (figs or {}).items() if r["median"] == r["median"]}


def file_system_of(profile: dict[str, Any] | None, fstype: str | None) -> FileSystem:
    if profile:
        meta = profile["metadata"]
        lat = {k: m["latency_s"]["median"] for k, m in meta.items()}
        rates = {k: {int(p): r["median"] for p, r in m["ops_per_s"].items()} for k, m in meta.items()}
        d = profile["data"]
        return FileSystem(name=f"{profile['filesystem'].get('type', '?')} at {profile.get('target')} (calibrated "
                          f"{profile.get('measured', '')})", latency_s=lat, rate_by_procs=rates,
                          write_MBps=d["write_MBps"]["1"]["median"], read_MBps=d["read_MBps"]["1"]["median"],
                          small_write_s=d["small_write_s"]["median"], small_read_s=d["small_read_s"]["median"],
                          random_read_s=calibrated_first_read_s(profile, d.get("random_read_s", {})
                                                                .get("median", 5e-4)),
                          fsync_s=d["fsync_s"]["median"], calibrated=True,
                          write_by_procs={int(p): r["median"] for p, r in d["write_MBps"].items()},
                          read_by_procs={int(p): r["median"] for p, r in d["read_MBps"].items()},
                          shared_slowdown=max(1.0, d.get("shared_stripe", {}).get("slowdown", {}).get("median", 1.0)),
                          shared_unit=int(d.get("shared_stripe", {}).get("piece") or 1 << 20),
                          write_call_s=_calls(d.get("write_call_s")),
                          write_call_busy_s=_calls(d.get("write_call_busy_s")),
                          cpus=int((profile.get("machine") or {}).get("cores_usable") or 0))
    kind = "local" if fstype in LOCAL_TYPES else "parallel"
    b = BUILTIN[kind]
    return FileSystem(name=f"built-in figures for a {kind} file system ({fstype or 'type unknown'}; "
                      "no --fs profile)", latency_s=dict(b["latency_s"]), write_MBps=b["write_MBps"],
                      read_MBps=b["read_MBps"], small_write_s=b["small_write_s"], small_read_s=b["small_read_s"],
                      random_read_s=b["random_read_s"], fsync_s=b["fsync_s"])


def staged(app: Mapping[str, float]) -> bool:
    """Stage mode takes the file onto the tier: an open for writing made it
    (O_CREAT) or emptied it (O_TRUNC). An O_CREAT open of a file that stood,
    without O_TRUNC, goes straight through under stage; the counters do not
    say whether it stood, so such a file is taken as new."""
    if _v(app, "MPIIO_COLL_OPENS", "MPIIO_INDEP_OPENS") > 0:
        return False   # a file MPI-IO opens is shared by its ranks: it stays on the file system
    return _v(app, "POSIX_OPENS_CREATE", "POSIX_OPENS_TRUNC", "STDIO_OPENS_CREATE", "STDIO_OPENS_TRUNC") > 0


def publish_side(app: Mapping[str, float], unit: int = UNIT, later: Mapping[str, float] | None = None
                 ) -> dict[str, float]:
    """What publishing a staged file costs the file system (docs/stage.md,
    Publishing): of at most one unit, a create and one write; larger, or
    over a file that stood (opened with O_TRUNC but never O_CREAT), a
    temporary name, its unit asked of the file system (fstat), the writes,
    and a rename. A file the job removed is never published, unless the
    trace says it was published before (later: what the job did to it on
    the file system after its publish, published_early)."""
    out = dict.fromkeys(PREDICTED, 0.0)
    stood = _v(app, "POSIX_OPENS_CREATE", "STDIO_OPENS_CREATE") == 0
    if _v(app, "POSIX_UNLINKS") > 0 and later is None:
        out["POSIX_UNLINKS"] = 1.0 if stood else 0.0   # the file that stood goes with it
        return out
    size = max(_v(app, "POSIX_MAX_BYTE_WRITTEN"), _v(app, "STDIO_MAX_BYTE_WRITTEN"), -1.0) + 1
    if later is not None:
        size = later["size"]
        out["POSIX_UNLINKS"] = float(_v(app, "POSIX_UNLINKS") > 0)
        for k in ("POSIX_OPENS", "POSIX_READS", "POSIX_WRITES", "POSIX_BYTES_READ", "POSIX_BYTES_WRITTEN"):
            out[k] += later[k]
    out["POSIX_OPENS"] += 1.0
    out["POSIX_OPENS_WRITE"] = out["POSIX_OPENS_CREATE"] = 1.0
    out["POSIX_WRITES"] += float(math.ceil(size / unit))
    out["POSIX_BYTES_WRITTEN"] += size
    if size > unit or stood:
        out["POSIX_RENAMES"] = 1.0
        out["POSIX_STATS"] = 1.0 if size > unit else 0.0
    return out


def concurrency(job: Job, per_proc: Mapping[str, Mapping[int, Any]]) -> int:
    """How many of the job's processes made file-system calls at once, on
    average: their lifetimes added up over the job's (a workflow of short
    steps one after another: 1, whatever their number; N ranks: N).
    Processes that used no recorded file (the shell that runs the steps)
    are left out."""
    users = {pid for procs in per_proc.values() for pid in procs}
    spans = [(l.start_ns, l.end_ns) for l in job.logs if l.pid in users and l.end_ns > l.start_ns]
    if not spans:
        return 1
    wall = max(e for _, e in spans) - min(s for s, _ in spans)
    return max(1, round(sum(e - s for s, e in spans) / wall)) if wall > 0 else len(spans)


TIME_COUNTERS = ("POSIX_F_READ_TIME", "POSIX_F_WRITE_TIME", "POSIX_F_META_TIME", "STDIO_F_READ_TIME",
                 "STDIO_F_WRITE_TIME", "STDIO_F_META_TIME")


def busy_share(job: Job, per_proc: Mapping[str, Mapping[int, Mapping[str, float]]], cpus: int) -> float:
    """The share of the machine's cores the job's processes kept busy
    outside their I/O calls (their lifetimes less the seconds in the files'
    calls, over the job's time and the cores): computing, or polling as MPI
    ranks do. Processes that used no recorded file (a shell waiting for its
    steps) are left out; 0 where the cores are not known."""
    if cpus <= 0:
        return 0.0
    io: dict[int, float] = {}
    for procs in per_proc.values():
        for pid, c in procs.items():
            io[pid] = io.get(pid, 0.0) + sum(_v(c, k) for k in TIME_COUNTERS)
    spans = [(l.pid, l.start_ns, l.end_ns) for l in job.logs if l.pid in io and l.end_ns > l.start_ns]
    if not spans:
        return 0.0
    wall = (max(e for _, _, e in spans) - min(b for _, b, _ in spans)) / 1e9
    lived: dict[int, float] = {}
    for pid, b, e in spans:
        lived[pid] = lived.get(pid, 0.0) + (e - b) / 1e9
    busy = sum(max(0.0, t - io[pid]) for pid, t in lived.items())
    return min(1.0, busy / (wall * cpus)) if wall > 0 else 0.0


STAGE_DELAY_NS = 1_000_000_000   # --stage-delay: a closed file not reopened this long is published
STAGE_DRAINERS = 4               # --stage-drainers: files the job's drainer publishes at once


def traced_events(job: Job) -> dict[str, list[tuple[int, int, int, int, int]]]:
    """path -> its POSIX calls in the trace, every process's, in the order
    of their start on the job's clock: (start ns, op, offset, length, end ns)."""
    out: dict[str, list[tuple[int, int, int, int, int]]] = {}
    for l in job.logs:
        t = l.trace
        if t is None:
            continue
        for path, mod, op, off, n, t0, t1 in zip(t.paths, t.module.tolist(), t.op.tolist(), t.offset.tolist(),
                                                 t.length.tolist(), t.start_ns.tolist(), t.end_ns.tolist()):
            if mod == 1:
                out.setdefault(path, []).append((l.start_ns + t0, op, off, n, l.start_ns + t1))
    for ev in out.values():
        ev.sort()
    return out


class BusyTime:
    """The wall-clock time some process spent in the traced calls on files
    the mode takes onto the tier, between two moments: under stage those
    calls are the node's memory's, so the time between a close and the next
    open shrinks by it (the union of the calls' spans, so that processes
    calling at once are not counted twice)."""

    def __init__(self, spans: list[tuple[int, int]]) -> None:
        merged: list[list[int]] = []
        for a, b in sorted(spans):
            if merged and a <= merged[-1][1]:
                merged[-1][1] = max(merged[-1][1], b)
            else:
                merged.append([a, b])
        self.starts = [a for a, _ in merged]
        self.spans = merged
        self.before = [0]
        for a, b in merged:
            self.before.append(self.before[-1] + b - a)

    def within(self, a: int, b: int) -> int:
        import bisect
        if not self.spans or b <= a:
            return 0
        i, j = bisect.bisect_right(self.starts, a) - 1, bisect.bisect_left(self.starts, b)
        total = self.before[j] - self.before[max(i, 0)]
        if i >= 0:   # (the span that began before a counts from a)
            total -= min(self.spans[i][1], a) - self.spans[i][0]
        if j > 0:    # (the last one counts up to b)
            total -= max(0, self.spans[j - 1][1] - b)
        return max(0, total)


def published_early(events: list[tuple[int, int, int, int, int]], busy: BusyTime | None = None,
                    delay_ns: int = STAGE_DELAY_NS) -> dict[str, float] | None:
    """When the job's drainer published a staged file before the job was
    done with it: its last close left it closed longer than the stage delay
    before the next open (a workflow's later step reads it). Then: its size
    at the publish and what the job did to it afterwards, on the file
    system (opens, reads, writes and their bytes); None when it stayed on
    the tier (or the trace holds no opens: logs before they were traced)."""
    if not any(op == 2 for _, op, _, _, _ in events):
        return None
    depth, size, closed_at, at = 0, 0, None, None
    for i, (t, op, off, n, _) in enumerate(events):
        if op == 2:
            gap = t - closed_at - (busy.within(closed_at, t) if busy else 0) if closed_at is not None else 0
            if depth == 0 and closed_at is not None and gap > delay_ns:
                at = i
                break
            depth += 1
        elif op == 3:
            depth = max(0, depth - 1)
            if depth == 0:
                closed_at = t
        elif op == 1:
            size = max(size, off + n)
        elif op == 4:
            size = n
    if at is None:
        return None
    later = events[at:]
    return {"size": float(size), "POSIX_OPENS": float(sum(op == 2 for _, op, _, _, _ in later)),
            "POSIX_READS": float(sum(op == 0 for _, op, _, _, _ in later)),
            "POSIX_BYTES_READ": float(sum(n for _, op, _, n, _ in later if op == 0)),
            "POSIX_WRITES": float(sum(op == 1 for _, op, _, _, _ in later)),
            "POSIX_BYTES_WRITTEN": float(sum(n for _, op, _, n, _ in later if op == 1))}


def cached_read_share(f: FileTotals, events: list[tuple[int, int, int, int, int]]) -> float:
    """The share of a file's reads that find every page they read read
    before, by any process of the node, since it was last written there:
    the client's cache answers them (on the testbed a random 4 KiB read of
    a page read before costs 1.2-2.5 us, of one not yet read a round trip,
    about 230 us; a reopen after writes finds the cache dropped:
    bench/client_cache.py). From the
    trace where it holds the reads; else the reads that jump spread
    uniformly over the pages read, and any bytes read beyond the file's."""
    if any(op == 0 for _, op, _, _, _ in events):
        seen: set[int] = set()
        hits = total = 0
        for _, op, off, n, _ in events:
            if n <= 0 or op not in (0, 1):
                continue
            pages = range(off // PAGE, (off + n - 1) // PAGE + 1)
            if op == 1:
                seen.difference_update(pages)
                continue
            total += 1
            if all(p in seen for p in pages):
                hits += 1
            seen.update(pages)
        return hits / total if total else 0.0
    app = f.fs
    n = _v(app, "POSIX_READS")
    if n <= 0:
        return 0.0
    jumps = max(0.0, n - _v(app, "POSIX_CONSEC_READS"))
    pages = math.ceil((_v(app, "POSIX_MAX_BYTE_READ") + 1) / PAGE)
    by_jumps = max(0.0, jumps - distinct_pages(pages, jumps)) / n
    read = _v(app, "POSIX_BYTES_READ")
    by_bytes = max(0.0, read - pages * PAGE) / read if read > 0 else 0.0
    return min(1.0, max(by_jumps, by_bytes))


def rename_sources(files: list[FileTotals], tier_names: set[str]) -> dict[str, str]:
    """A staged file renamed -> the name it took, where the names say it
    (NAME.anything moved to NAME: NCO's NAME.pidN.ncap2.tmp, and most
    programs' temporary files)."""
    out = {}
    for f in files:
        if staged(f.app) and _v(f.app, "POSIX_RENAMES") > 0:
            for t in tier_names:
                if f.path.startswith(t + "."):
                    out[f.path] = t
    return out


def stage_lookups(files: list[FileTotals], per_proc: Mapping[str, Mapping[int, Mapping[str, float]]]
                  ) -> dict[str, float]:
    """The tier's look-ups on the file system at the first creating open of
    each staged file (src/stage/open.c): a stat of the name (and, where it
    stood, an access check); the first time a process creates in a
    directory it did not make, a stat and an access check of the
    directory; in one it made, none for its first file (nothing else is
    there), one for each later one (the first was handed to the job's
    drainer at its close, so the directory may hold published files; files
    are taken as created and closed one after another). path -> stats."""
    made = {(path, pid) for path, procs in per_proc.items() for pid, c in procs.items() if c.get("POSIX_MKDIRS", 0) > 0}
    out: dict[str, float] = {}
    seen_dirs: set[tuple[str, int]] = set()
    for f in files:
        if not staged(f.app):
            continue
        d = f.path.rsplit("/", 1)[0]
        creators = [pid for pid, c in sorted(per_proc.get(f.path, {}).items()) if staged(c)] or [0]
        first = creators[0]
        n = 1.0 + (_v(f.app, "POSIX_OPENS_CREATE", "STDIO_OPENS_CREATE") == 0)
        if (d, first) not in seen_dirs:
            seen_dirs.add((d, first))
            n = 0.0 if (d, first) in made else n + 2
        out[f.path] = n
    return out


def published(mode: str, f: FileTotals, local: bool, direct: bool | None = None) -> bool:
    """Under mode the file lives on the tier and reaches the file system as
    its publish, unless it goes straight through at its first write (direct:
    auto_direct; by default, auto's --auto-large on the size buckets, and
    never under stage)."""
    if direct is None:
        direct = mode == "auto" and large_writes_only(f.app)
    if mode == "stage":
        return staged(f.app) and not direct
    return mode == "auto" and not local and staged(f.app) and not direct


def deciding_write(events: list[tuple[int, int, int, int, int]]) -> int | None:
    """The length of a file's first traced write, as auto's move at it sees
    it: 0 when the move cannot happen then (the file sized by a truncate
    before it, or open more than once: the library moves only an empty
    file one description has open, src/tiers/stage.c); None when no write
    was traced."""
    depth, sized = 0, False
    for _, op, _, n, _ in events:
        if op == 2:
            depth += 1
        elif op == 3:
            depth = max(0, depth - 1)
        elif op == 4:
            sized = n > 0
        elif op == 1:
            return 0 if sized or depth > 1 else n
    return None


def auto_direct(f: FileTotals, large: int, first_write: int | None) -> bool:
    """Auto sends the staged file straight through at its first write: that
    write (from the trace) is at least large; untraced, every write is (the
    size buckets). large 0: never."""
    if first_write is not None:
        return large > 0 and first_write >= large
    return large_writes_only(f.app, large)


def filled_by_others(procs: Mapping[int, Mapping[str, float]]) -> bool:
    """The processes that made the file wrote nothing in it; another
    process wrote it (a parent makes a checkpoint, a child fills it in).
    When auto sends such a file straight through at that process's first
    write (stage_foreign_move_at_first_write), that process's open was the
    tier's: the file system sees the publish's create and the reopen only."""
    made = [c for c in procs.values() if staged(c)]
    writes = ("POSIX_WRITES", "STDIO_WRITES")
    return bool(made) and not any(_v(c, *writes) > 0 for c in made) and \
        any(_v(c, *writes) > 0 for c in procs.values() if not staged(c))


def mpiio_helpers(files: list[FileTotals]) -> set[str]:
    """Files the MPI-IO library makes beside a file it opens (OMPIO's
    NAME.locktest.R, ROMIO's shared-pointer files): opened inside
    MPI_File_open, so never staged (a shared open stays on the file
    system); the counters do not say which opens those were, the names do."""
    shared = [f.path + "." for f in files if _v(f.app, "MPIIO_COLL_OPENS", "MPIIO_INDEP_OPENS") > 0]
    return {f.path for f in files if any(f.path.startswith(p) for p in shared)}


def engine_handles(job: Job, files: list[FileTotals]) -> dict[str, float]:
    """Auto buffers what MPI-IO writes, and its engine writes through a
    handle of its own where the program's view is not plain bytes
    (src/mpi/mpiio.c, writer_handle): one more independent MPI_File_open
    per aggregator, one per node, each with the kernel open and stat that
    the MPI-IO library's open makes, and OMPIO's lock test beside it
    (NAME.locktest.R of the aggregator's rank R: an open, an unlink). The
    counters say a view was set (MPIIO_VIEWS), not whether the last one
    was plain bytes; a file written after a view is taken as such. Returns
    path -> the extra opens (of the file, and of its lock-test files)."""
    first_rank: dict[str, int] = {}
    for l in job.logs:
        if l.rank >= 0:
            h = l.info.get("host", "")
            first_rank[h] = min(first_rank.get(h, l.rank), l.rank)
    aggregators = max(1, len(first_rank))
    out: dict[str, float] = {}
    for f in files:
        if _v(f.app, "MPIIO_VIEWS") > 0 and _v(f.app, "MPIIO_INDEP_WRITES", "MPIIO_COLL_WRITES") > 0:
            out[f.path] = float(aggregators)
            for r in first_rank.values() or (0,):
                out[f"{f.path}.locktest.{r}"] = out.get(f"{f.path}.locktest.{r}", 0.0) + 1.0
    return out


def _runs(extents: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """The byte runs (start, end) that extents (offset, length) cover:
    sorted, touching and overlapping ones joined."""
    out: list[list[int]] = []
    for off, n in sorted(extents):
        if n <= 0:
            continue
        if out and off <= out[-1][1]:
            out[-1][1] = max(out[-1][1], off + n)
        else:
            out.append([off, off + n])
    return [(a, b) for a, b in out]


def _pieces(runs: list[tuple[int, int]], *steps: int) -> int:
    """How many pieces runs make when each is also cut where a multiple of
    any of steps falls."""
    n = 0
    for a, b in runs:
        cuts = {a, b}
        for step in steps:
            cuts.update(range((a // step + 1) * step, b, step))
        n += len(cuts) - 1
    return n


def acb_flush(per_rank: Mapping[int, list[tuple[int, int]]], nodes: int, collective: bool = False,
              stripe: int = ACB_STRIPE, write: int = ACB_WRITE, buffer: int = ACB_BUFFER,
              direct: int = ACB_DIRECT, ranks: int | None = None) -> tuple[int, int]:
    """The writes and bytes acb's flush makes of the ranks' pending writes
    (src/acb/exchange.c): where every rank's own writes form runs of at
    least `direct` bytes on average (the file's direct unit) (and were made independently: a
    collective write's pieces are the MPI library's, not the rank's), each
    rank writes its runs, cut at multiples of `write`; otherwise the data
    moves in rounds to min(nodes, ranks (default: the writers), stripes
    touched) aggregators, stripe
    k to aggregator k mod A, each round a window of buffer / stripe stripes
    per aggregator, and each aggregator writes the runs it received, cut at
    stripe boundaries when there are several aggregators, at the window's
    and at multiples of `write`."""
    own = {r: _runs(e) for r, e in per_rank.items() if e}
    if not own:
        return 0, 0
    if not collective and all(sum(b - a for a, b in rs) >= len(rs) * direct for rs in own.values()):
        return (sum(_pieces(rs, write) for rs in own.values()),
                sum(b - a for rs in own.values() for a, b in rs))
    union = _runs([(a, b - a) for rs in own.values() for a, b in rs])
    lo, hi = union[0][0], union[-1][1]
    naggs = max(1, min(nodes, ranks or len(per_rank), (hi - 1) // stripe - lo // stripe + 1))
    window = max(1, buffer // stripe) * naggs * stripe
    steps = (window, write) + ((stripe,) if naggs > 1 else ())
    return _pieces(union, *steps), sum(b - a for a, b in union)


def mpiio_written(app: Mapping[str, float]) -> bool:
    return _v(app, "MPIIO_INDEP_WRITES", "MPIIO_COLL_WRITES") > 0


def logged_nodes(job: Job) -> int:
    """The hosts the job's MPI ranks ran on (1 without ranks)."""
    return len({l.info.get("host", "") for l in job.logs if l.rank >= 0}) or 1


def acb_direct_unit(f: FileTotals, nodes: int, stripe: int = ACB_STRIPE) -> int:
    """The write size from which acb lets a write through as it is
    (src/mpi/mpiio.c, block_unit and shared_unit): the file's block (its
    st_blksize, at least 64 KiB); with ranks on several hosts, four blocks,
    at most a stripe."""
    block = max(ACB_DIRECT, int(_v(f.fs, "POSIX_FILE_ALIGNMENT")))
    return max(block, min(4 * block, stripe)) if nodes > 1 else block


def traced_writes(job: Job, paths: set[str]) -> tuple[dict[str, dict[int, list[tuple[int, int]]]], set[str],
                                                     dict[str, list[int]]]:
    """The kernel writes of paths in the trace, by process: path -> pid ->
    [(offset, length)]; the paths whose every write is in it (no trace
    dropped a call of them); and the lengths of their MPI-IO writes."""
    extents: dict[str, dict[int, list[tuple[int, int]]]] = {p: {} for p in paths}
    whole = set(paths) if any(l.trace is not None for l in job.logs) else set()
    mpi_lengths: dict[str, list[int]] = {}
    for l in job.logs:
        t = l.trace
        if t is None:
            continue
        for path, mod, op, off, n in zip(t.paths, t.module.tolist(), t.op.tolist(), t.offset.tolist(),
                                         t.length.tolist()):
            if path in extents and mod == 1 and op == 1 and off >= 0:
                extents[path].setdefault(l.pid, []).append((off, n))
            elif path in extents and mod == 3 and op == 1:
                mpi_lengths.setdefault(path, []).append(n)
        if t.dropped:
            whole -= {p for p in t.paths if p in paths}
    return extents, whole, mpi_lengths


def shared_stripe_bytes(per_pid: Mapping[int, list[tuple[int, int]]], unit: int) -> float:
    """The bytes written into stripes (of unit bytes) that more than one
    process writes: on a parallel file system each such write waits for
    the stripe's lock to come over from the other writer."""
    writers: dict[int, set[int]] = {}
    for pid, ev in per_pid.items():
        for off, n in ev:
            for k in range(off // unit, (off + n - 1) // unit + 1):
                writers.setdefault(k, set()).add(pid)
    shared = 0
    for pid, ev in per_pid.items():
        for off, n in ev:
            pos, end = off, off + n
            while pos < end:
                stop = min(end, (pos // unit + 1) * unit)
                if len(writers[pos // unit]) > 1:
                    shared += stop - pos
                pos = stop
    return float(shared)


def contention(job: Job, files: list[FileTotals], unit: int, acb: bool = False, nodes: int = 1
               ) -> dict[str, float]:
    """path -> the bytes written into stripes another process writes too,
    for the files several processes write (the trace's writes; none without
    it). acb: as acb's flush would write the files MPI-IO writes (its
    rounds give each stripe one aggregator: none; where each rank writes
    its own runs, or a write goes straight through, those)."""
    paths = {f.path for f in files if (not acb or mpiio_written(f.app))}
    extents, whole, _ = traced_writes(job, paths)
    out: dict[str, float] = {}
    for path in whole:
        per_pid = extents[path]
        if len(per_pid) < 2:
            continue
        if acb:
            f = next(f for f in files if f.path == path)
            if _v(f.app, "MPIIO_COLL_WRITES") > 0 or not all(
                    sum(b - a for a, b in _runs(e)) >= len(_runs(e)) * acb_direct_unit(f, nodes)
                    for e in per_pid.values()):
                out[path] = 0.0   # (rounds: one aggregator a stripe)
                continue
            per_pid = {pid: [(a, b - a) for a, b in _runs(e)] for pid, e in per_pid.items()}
        out[path] = shared_stripe_bytes(per_pid, unit)
    return out


def acb_side(job: Job, files: list[FileTotals], nodes: int | None = None) -> dict[str, tuple[float, float]]:
    """path -> the writes and bytes acb would make of each file MPI-IO
    writes, taken as flushed once, at its close. The ranks' pending writes
    are their writes of the file as the profile run's trace holds them (the
    MPI library's own kernel writes: for independent writes without a
    view, the rank's own; for collective ones, its aggregators', whose
    union is the same bytes; a process with nothing traced wrote none of
    it); without a whole trace, the logged bytes in
    pieces of what the flush writes (a stripe on several nodes, else a
    largest write). nodes: the job's (default: the logged hosts); at
    scale, the logged file's pieces are cut as that many aggregators cut
    them, and the counts then grow with the job."""
    if nodes is None:
        nodes = logged_nodes(job)
    ranks = sum(l.rank >= 0 for l in job.logs) or None   # (a collective run's writers are its aggregators)
    written = {f.path: f for f in files if mpiio_written(f.app)}
    extents, whole, mpi_lengths = traced_writes(job, set(written))
    out: dict[str, tuple[float, float]] = {}
    for path, f in written.items():
        collective = _v(f.app, "MPIIO_COLL_WRITES") > 0
        unit = acb_direct_unit(f, nodes)
        if collective and all(n >= unit for n in mpi_lengths.get(path, [0])):
            out[path] = (_v(f.fs, "POSIX_WRITES"), _v(f.fs, "POSIX_BYTES_WRITTEN"))
            continue   # (every rank's piece worth writing as it is: the MPI library's collective write)
        if path in whole and extents[path]:
            pending: dict[int, list[tuple[int, int]]] = {}
            w = b = 0
            for pid, ev in extents[path].items():
                for off, n in ev:
                    # (a write worth making as it is goes straight through,
                    # while no collective call made others' writes pending)
                    if not collective and _v(f.app, "MPIIO_VIEWS") == 0 and n >= unit and (
                            off % unit == 0 or n >= 4 * unit):
                        w, b = w + 1, b + n
                    else:
                        pending.setdefault(pid, []).append((off, n))
            fw, fb = acb_flush(pending, nodes, collective, direct=unit, ranks=ranks)
            w, b = w + fw, b + fb
        else:
            b = _v(f.fs, "POSIX_BYTES_WRITTEN")
            w = math.ceil(b / (ACB_STRIPE if nodes > 1 else ACB_WRITE))
        out[path] = (float(w), float(b))
    return out


def renamed_on_tier(files: list[FileTotals]) -> set[str]:
    """Names that staged files took by a rename (NCO's temporary file moved
    over its output): the tier renames them, so the file system sees the
    file once, as its publish (counted at the staged file), and no call of
    the program's on the new name. The counters say which files were
    renamed (POSIX_RENAMES) and which names were taken
    (POSIX_RENAME_TARGETS), not which went to which: a name taken in a
    directory where a staged file was renamed is taken as one of them."""
    dirs = {f.path.rsplit("/", 1)[0] for f in files if staged(f.app) and _v(f.app, "POSIX_RENAMES") > 0}
    return {f.path for f in files if _v(f.app, "POSIX_RENAME_TARGETS") > 0 and not staged(f.app)
            and f.path.rsplit("/", 1)[0] in dirs}


def predict_file(mode: str, f: FileTotals, unit: int = UNIT, readahead: int = READAHEAD,
                 lookups: float = 0.0, local: bool = False, on_tier: bool = False,
                 helper: bool = False, replayed: Mapping[str, float] | None = None,
                 later: Mapping[str, float] | None = None, engine_opens: float = 0.0,
                 acb: tuple[float, float] | None = None, direct: bool | None = None,
                 filled: bool = False) -> dict[str, float]:
    """The fs side `mode` would leave of file f (its profile-mode log);
    lookups: stage's own stats at its first creating open; on_tier: a name
    a staged file took (renamed_on_tier); helper: the MPI-IO library's own
    file (mpiio_helpers); replayed: the file's writes, reads and bytes as
    its trace replayed under buffer mode left them (sluice.replay); later:
    a staged file published before the job was done with it
    (published_early); engine_opens: auto's own MPI-IO opens of it, or of
    the lock-test file beside it (engine_handles); acb: the writes and bytes
    of acb's flush of a file MPI-IO writes (acb_side); direct: auto sends
    it straight through at its first write (auto_direct); filled: another
    process than its makers writes it (filled_by_others)."""
    fs = {k: float(f.fs.get(k) or 0) for k in PREDICTED}
    if mode in ("auto", "acb") and engine_opens:
        fs["POSIX_OPENS"] += engine_opens
        fs["POSIX_OPENS_WRITE"] += engine_opens
        if helper:   # (OMPIO's lock test: made, then removed)
            fs["POSIX_OPENS_CREATE"] += engine_opens
            fs["POSIX_UNLINKS"] += engine_opens
        else:        # (the MPI-IO library's open asks for the file's size)
            fs["POSIX_STATS"] += engine_opens
    if mode == "acb" or (mode == "auto" and acb is not None):
        # (auto aggregates what MPI-IO writes as acb does, on any file system)
        if acb is not None:
            fs["POSIX_WRITES"], fs["POSIX_BYTES_WRITTEN"] = acb
        return fs
    if mode in ("stage", "auto"):
        # (their tier opens streams itself: a stream's kernel open is the
        # POSIX record's, src/interpose/stdio.c)
        fs["POSIX_OPENS"] += fs["STDIO_OPENS"]
        fs["POSIX_OPENS_WRITE"] += fs["STDIO_OPENS_WRITE"]
        fs["POSIX_OPENS_CREATE"] += fs["STDIO_OPENS_CREATE"]
        fs["STDIO_OPENS"] = fs["STDIO_OPENS_WRITE"] = fs["STDIO_OPENS_CREATE"] = 0.0
    if mode == "auto" and local and _v(f.app, "MPIIO_COLL_OPENS", "MPIIO_INDEP_OPENS") == 0:
        return fs   # (a file MPI-IO opens is buffered by auto wherever it is)
    if helper and mode in ("stage", "auto"):
        return fs
    if on_tier and mode in ("stage", "auto"):
        out = dict.fromkeys(PREDICTED, 0.0)
        out["POSIX_MKDIRS"], out["POSIX_RMDIRS"] = fs["POSIX_MKDIRS"], fs["POSIX_RMDIRS"]
        return out
    if published(mode, f, local, direct):
        out = publish_side(f.app, unit, later)
        out["POSIX_STATS"] += lookups
        out["POSIX_MKDIRS"], out["POSIX_RMDIRS"] = fs["POSIX_MKDIRS"], fs["POSIX_RMDIRS"]
        return out
    # auto's large first write: the empty file published (a create), the
    # program's descriptor reopened on it where it stood (an open and a
    # seek), then straight through, as buffer mode (written by another
    # process than its maker: that process's open was the tier's, the
    # reopen stands for it)
    went_direct = mode in ("auto", "stage") and staged(f.app)
    if mode == "buffer" or mode == "auto":
        # (an O_APPEND descriptor's first write asks the file system where
        # the end is: other processes may have appended since)
        if _v(f.app, "POSIX_WRITES") > 0:
            fs["POSIX_STATS"] += min(_v(f.app, "POSIX_OPENS_APPEND"), _v(f.app, "POSIX_WRITES"))
        fs["POSIX_WRITES"] = float(buffer_writes(f.app, f.fs, unit))
        fs["POSIX_READS"] = float(buffer_reads(f.app, f.fs, readahead))
        # (a read that did not continue the previous one still does not; the windows do)
        fs["POSIX_CONSEC_READS"] = max(0.0, fs["POSIX_READS"] - (_v(f.fs, "POSIX_READS") -
                                                               _v(f.fs, "POSIX_CONSEC_READS")))
        fs["STDIO_WRITES"] = float(stdio_writes(f.fs, f.app, unit))
        if replayed and not went_direct:
            fs.update(replayed)
    if went_direct:
        if not filled:
            fs["POSIX_OPENS"] += 1
            fs["POSIX_OPENS_WRITE"] += 1
        fs["POSIX_SEEKS"] += 1
        fs["POSIX_STATS"] += lookups
    return fs


def large_writes_only(app: Mapping[str, float], large: int = AUTO_LARGE) -> bool:
    """Every write of the file is at least `large` (the size buckets): auto
    sends it straight through at its first write."""
    writes = _v(app, "POSIX_WRITES")
    if writes <= 0 or large <= 0:
        return False   # (0: staged whatever the size)
    return _small_writes(app, large) == 0


def io_seconds_by_kind(fs: Mapping[str, float], sysfs: FileSystem, conc: int,
                       made: float | None = None, cached: float = 0.0, busy: float = 0.0) -> dict[str, float]:
    """The seconds one file's calls and bytes keep their processes in the
    file system, added up over the processes, by kind (open: creates
    included; stat, rename, unlink, mkdir, rmdir; write and read: the calls
    and their bytes; fsync), while conc of them make such calls at once:
    each metadata call its latency at that concurrency (a create of a file
    that is written costs a written file's create, write and close; each
    other open for writing of a written file, a close's flush); each read
    that does not continue the previous one a random read's round trip,
    each other call its fixed cost (the 4 KiB call's, less its bytes); the
    bytes at conc streams' share of the bandwidth; each fsync its latency.
    made: the most files the opens can have made (an O_CREAT open of a
    file that stands is an open: once a process's file, and once more
    after each unlink), where the counts are a file's. cached: the share of
    the reads that find their pages read before (the client's cache
    answers them, bytes and all). busy: the share of the cores the job
    keeps computing meanwhile (a write call then costs more)."""
    t = dict.fromkeys((*META_KINDS, "write", "read", "fsync"), 0.0)
    opens = _v(fs, "POSIX_OPENS", "STDIO_OPENS")
    creates = min(_v(fs, "POSIX_OPENS_CREATE", "STDIO_OPENS_CREATE"), opens)
    if made is not None:
        creates = min(creates, made)
    writes, reads = _v(fs, "POSIX_WRITES", "STDIO_WRITES"), _v(fs, "POSIX_READS", "STDIO_READS")
    written = writes > 0 and "create_written" in sysfs.latency_s
    t["open"] = (creates * sysfs.call_seconds("create_written" if written else "create", conc)
                 + (opens - creates) * sysfs.call_seconds("open", conc))
    if writes > 0:
        updates = max(0.0, min(_v(fs, "POSIX_OPENS_WRITE", "STDIO_OPENS_WRITE"), writes) - creates)
        t["write"] += updates * sysfs.flush_s
    for kind, counters in META_KINDS.items():
        if kind != "open":
            t[kind] = _v(fs, *counters) * sysfs.call_seconds(kind, conc)
    wbytes, rbytes = _v(fs, "POSIX_BYTES_WRITTEN", "STDIO_BYTES_WRITTEN"), _v(fs, "POSIX_BYTES_READ",
                                                                             "STDIO_BYTES_READ")
    wcall = sysfs.write_fixed_s(wbytes / writes if writes > 0 else SMALL, busy)
    rcall = max(0.0, sysfs.small_read_s - SMALL * sysfs.byte_seconds(False, 1))
    jumps = max(0.0, _v(fs, "POSIX_READS") - _v(fs, "POSIX_CONSEC_READS"))
    # (a created file's writes are in its create's figure when it is small)
    t["write"] += max(0.0, writes - (creates if written else 0)) * wcall + wbytes * sysfs.byte_seconds(True, conc)
    cold = 1.0 - cached
    t["read"] = (reads * cached * CACHED_READ_S
                 + cold * ((reads - jumps) * rcall
                           + jumps * max(0.0, sysfs.random_read_s - SMALL * sysfs.byte_seconds(False, 1))
                           + rbytes * sysfs.byte_seconds(False, conc)))
    t["fsync"] = _v(fs, "POSIX_FSYNCS", "POSIX_FDSYNCS") * sysfs.fsync_s
    return t


def metadata_ops(fs: Mapping[str, float]) -> float:
    return sum(_v(fs, *c) for c in META_KINDS.values())


def predict(job: Job, profile: dict[str, Any] | None = None, scale: int | None = None,
            unit: int = UNIT, readahead: int = READAHEAD, replay: bool = True,
            nodes: int | None = None, every_file: bool = False) -> dict[str, Any]:
    """The prediction document: {"file_system", "job", "modes": {MODE: {"fs", "io_time_s", "metadata_ops"}}}."""
    modes_logged = {l.info.get("mode", "profile") for l in job.logs}
    if modes_logged - {"profile", ""}:
        raise UserError(f"sluice predict reads a profile-mode run's logs (the fs side of another mode is that "
                        f"mode's): these ran under {', '.join(sorted(modes_logged))}; run it again with "
                        "--mode profile")
    fstype = None
    for l in job.logs:
        mounts = l.info.get("mounts", "")
        if mounts:
            fstype = mounts.splitlines()[0].split("\t")[0]
            break
    if profile and profile.get("filesystem", {}).get("type"):
        fstype = profile["filesystem"]["type"]   # (the job as it would run there: auto decides by it)
    sysfs = file_system_of(profile, fstype)
    by_model = auto_large_of(profile) if profile else None
    large = by_model.large if by_model else AUTO_LARGE   # (what `sluice run --fs` gives auto)
    procs = max(1, job.processes)
    per_proc = per_process_app(job)   # (path -> process -> its app counters: used thrice below)
    conc = concurrency(job, per_proc)
    factor = 1.0
    if scale:
        # (the processes that opened a recorded file are the ones repeated:
        # not the shell, nor the parent that made the directory and forked them)
        factor = scale / max(1, len({pid for by in per_proc.values() for pid, c in by.items()
                                     if _v(c, "POSIX_OPENS", "STDIO_OPENS", "MPIIO_COLL_OPENS",
                                           "MPIIO_INDEP_OPENS") > 0}) or procs)
        conc = max(1, round(conc * factor))
        procs = scale
    files = [f for f in job.files if not f.path.startswith("<")]
    helpers = mpiio_helpers(files)
    engine = engine_handles(job, files)
    nodes = nodes or logged_nodes(job)
    aggregated = acb_side(job, files, nodes)
    lookups = stage_lookups([f for f in files if f.path not in helpers], per_proc)
    tier_names = renamed_on_tier(files)
    events = traced_events(job)
    auto_goes = {f.path: auto_direct(f, large, deciding_write(events[f.path]) if f.path in events else None)
                 for f in files}
    # (stage goes straight through only by a profile's size: `sluice run --fs`)
    direct_by_mode = {"auto": auto_goes, "stage": auto_goes if by_model else dict.fromkeys(auto_goes, False)}
    on_tier = {f.path for f in files if staged(f.app)} | tier_names
    busy = BusyTime([(e[0], e[4]) for p in on_tier for e in events.get(p, [])])
    later: dict[str, dict[str, float]] = {}
    for src, dst in rename_sources(files, tier_names).items():   # (the file's life under both names)
        early = published_early(sorted(events.get(src, []) + events.get(dst, [])), busy)
        if early is not None:
            later[src] = early
    for f in files:
        if f.path not in later and staged(f.app):
            early = published_early(events.get(f.path, []), busy)
            if early is not None:
                later[f.path] = early
    replayed: dict[str, dict[str, float]] = {}
    streams = stdio_buffered(job, unit)
    replay_failed = ""
    if replay and any(l.trace is not None for l in job.logs):
        from sluice import replay as replay_mod
        try:
            replayed = replay_mod.replay(replay_mod.plan(job, files, per_proc), "buffer")
        except replay_mod.ReplayError as e:
            replay_failed = str(e)   # (said in the output: buffer mode then comes from the counters)
    computing = busy_share(job, per_proc, sysfs.cpus)
    # auto leaves a file of the node's own file system to profile, and one
    # where the profile found staging paid at no size (`sluice run --fs`)
    local = fstype in LOCAL_TYPES or bool(by_model and by_model.nothing_to_gain)
    out: dict[str, Any] = {
        "file_system": {"name": sysfs.name, "calibrated": sysfs.calibrated, "auto_large": large,
                        "auto_large_why": by_model.why if by_model else "--auto-large's default"},
        "job": {"id": job.job_id, "processes": job.processes, "predicted_for": procs, "files": len(files),
                "concurrency": conc, "busy_cores_share": computing,
                "replayed_files": len(replayed), "replay_failed": replay_failed},
        "modes": {},
    }
    wall = job_wall_s(job)
    cached = {f.path: cached_read_share(f, events.get(f.path, [])) for f in files}
    slow = sysfs.shared_slowdown > 1
    shared = contention(job, files, sysfs.shared_unit) if slow else {}
    shared_acb = contention(job, files, sysfs.shared_unit, acb=True, nodes=nodes) if slow else {}
    per_file: dict[str, dict[str, float]] = {}
    for mode in MODES:
        total = {k: 0.0 for k in PREDICTED}
        kinds: dict[str, float] = {}
        # The files still on the tier when the job ends are published then,
        # STAGE_DRAINERS at once: each call waits as long as the file
        # system takes for that many (a file published while the job ran,
        # its delay after its close, goes on its own)
        goes_direct = direct_by_mode.get(mode, {})
        at_end = sum(1 for f in files if published(mode, f, local, goes_direct.get(f.path)) and f.path not in helpers
                     and f.path not in later and _v(f.app, "POSIX_UNLINKS") == 0)
        end_conc = max(1, min(STAGE_DRAINERS, round(at_end * factor)))
        for f in files:
            looked = lookups.get(f.path, 0.0)
            one = {k: x * factor for k, x in
                   predict_file(mode, f, unit, readahead, looked, local, f.path in tier_names,
                                f.path in helpers, replayed_file(f, replayed, streams), later.get(f.path),
                                engine.get(f.path, 0.0), aggregated.get(f.path), goes_direct.get(f.path),
                                filled_by_others(per_proc.get(f.path, {}))).items()}
            for k, x in one.items():
                total[k] += x
            if published(mode, f, local, goes_direct.get(f.path)) and f.path not in helpers:
                # the publish is the job drainer's; the look-ups the program's
                publish = dict(one, POSIX_STATS=one["POSIX_STATS"] - looked * factor)
                spent = io_seconds_by_kind(publish, sysfs, 1 if f.path in later else end_conc,
                                           cached=cached[f.path], busy=computing if f.path in later else 0.0)
                spent["stat"] += looked * factor * sysfs.call_seconds("stat", conc)
            else:
                # (the file is made at most once in each repetition of the job, and again after each unlink)
                spent = io_seconds_by_kind(one, sysfs, conc, made=factor + one["POSIX_UNLINKS"],
                                           cached=cached[f.path], busy=computing)
                # (the bytes that wait for a stripe's lock from another writer)
                held = (shared_acb if mode == "acb" or (mode == "auto" and f.path in aggregated) else
                        shared).get(f.path, 0.0)
                spent["write"] += held * factor * sysfs.byte_seconds(True, conc) * (sysfs.shared_slowdown - 1)
            for k, x in spent.items():
                kinds[k] = kinds.get(k, 0.0) + x
            per_file.setdefault(f.path, {})[mode] = sum(spent.values())
        meta = metadata_ops(total)
        out["modes"][mode] = {"modelled": True, "fs": total, "metadata_ops": meta,
                              "io_time_s": sum(kinds.values()) / procs, "io_time_by_kind_s": kinds,
                              "metadata_ops_per_s": meta / wall if wall > 0 else 0.0,
                              "metadata_server_load": sysfs.server_load(total, wall, conc)}
    out["choice"] = model_choice(per_file, procs)
    if not every_file:   # (plan() reads every file's; the document lists the top ones)
        out["choice"].pop("all_files")
    out["job"]["wall_s"] = wall
    out["job"]["nodes"] = nodes
    return out


# the order a tie is broken in: the mode that changes least first
LEAST_CHANGE = ("profile", "buffer", "acb", "auto", "stage")


def model_choice(per_file: Mapping[str, Mapping[str, float]], procs: int, top: int = 20) -> dict[str, Any]:
    """Each file's cheapest mode by the model (where two cost the same, the
    one that changes less), and the job's I/O time if each file ran in
    its own: what `--mode auto` would gain by deciding by the model rather
    than by its rules. The `top` files that cost most under profile are
    listed with their seconds under each mode."""
    by_mode: dict[str, int] = {}
    best_s = 0.0
    rows = []
    for path, secs in per_file.items():
        best = min(secs, key=lambda m: (round(secs[m], 12), LEAST_CHANGE.index(m)))
        by_mode[best] = by_mode.get(best, 0) + 1
        best_s += secs[best]
        rows.append({"path": path, "mode": best, "seconds": dict(secs)})
    rows.sort(key=lambda r: -r["seconds"].get("profile", 0.0))
    return {"io_time_s": best_s / max(1, procs), "files_by_mode": by_mode, "files": rows[:top], "all_files": rows}


PLAN_RULES = 32      # the library's most per-path rules (src/core/policy.c, POLICY_MAX_PREFIXES)
PLAN_GAIN = 0.05     # a file gets a rule of its own where its cheapest mode saves this much of auto's time


def plan(doc: Mapping[str, Any], rules: int = PLAN_RULES, gain: float = PLAN_GAIN) -> tuple[str, int]:
    """A `sluice run --config` file that runs the job under auto with each
    file whose cheapest mode by the model saves more than `gain` of what
    auto's rules would cost it put in that mode (a [policy] rule of its
    own path), the largest savings first, at most `rules` of them.
    Returns the TOML text and how many files were left out for want of
    rules."""
    c = doc["choice"]
    wins = []
    for r in c.get("all_files", c["files"]):
        secs, best = r["seconds"], r["mode"]
        saved = secs.get("auto", 0.0) - secs[best]
        if best != "auto" and saved > gain * secs.get("auto", 0.0) and saved > 0:
            wins.append((saved, r["path"], best))
    wins.sort(reverse=True)
    kept, left = wins[:rules], max(0, len(wins) - rules)
    lines = ["# sluice predict --plan: auto, and each file below in its cheapest mode by the model",
             f"# (docs/predict.md) on {doc['file_system']['name']}",
             f"# predicted I/O time a process: auto's rules {doc['modes']['auto']['io_time_s']:.4g} s, "
             f"each file in its cheapest mode {c['io_time_s']:.4g} s"]
    if left:
        lines.append(f"# {left} more file(s) would gain too: the library takes at most {rules} rules")
    lines += ['mode = "auto"', "", "[policy]"]
    for saved, path, mode in kept:
        lines.append(f'{json.dumps(path)} = "{mode}"   # saves {saved:.3g} s')
    return "\n".join(lines) + "\n", left


def job_wall_s(job: Job) -> float:
    """The job's wall-clock time as logged, first start to last end (under
    weak scaling the same: each process's pattern is repeated, at once)."""
    spans = [(l.start_ns, l.end_ns) for l in job.logs if l.end_ns > l.start_ns]
    return (max(e for _, e in spans) - min(s for s, _ in spans)) / 1e9 if spans else 0.0


def replayed_file(f: FileTotals, replayed: Mapping[str, Mapping[str, float]],
                  streams: Mapping[str, Mapping[str, float]]) -> dict[str, float] | None:
    """What the trace says of f under buffer mode: its POSIX calls replayed
    (sluice.replay) and its streams' kernel calls (stdio_buffered), never
    more of them than the profile run made."""
    one = dict(replayed.get(f.path) or {})
    for k, n in (streams.get(f.path) or {}).items():
        one[k] = min(n, _v(f.fs, k))
    return one or None


def load(path: Path | None) -> dict[str, Any] | None:
    if path is None:
        return None
    from sluice.autolarge import read_profile
    return read_profile(path)
