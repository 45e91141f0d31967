"""The checks: each looks at a job's merged counters (and, where it needs
them, each process's) and returns findings with their evidence and fix.

Every finding carries the seconds of I/O time it explains (`cost`), from
the log's time counters on the application side (what the program waited
for); severity and order come from that share of the job's I/O time.
"""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass, field
from posixpath import dirname

from sluice.advise import thresholds as th
from sluice.advise.fix import is_real
from sluice.report.model import SHARED, FileTotals, Job, per_process_app
from sluice.report.text import human_bytes

SMALL_BUCKETS = ("0_100", "100_1K", "1K_10K", "10K_100K", "100K_1M")
ALL_BUCKETS = SMALL_BUCKETS + ("1M_4M", "4M_10M", "10M_100M", "100M_1G", "1G_PLUS")
META_CALLS = tuple(f"POSIX_{k}" for k in ("OPENS", "STATS", "SEEKS", "UNLINKS", "RENAMES", "MKDIRS", "RMDIRS",
                                          "TRUNCATES", "CHMODS", "CHOWNS", "UTIMES", "LINKS", "XATTR_READS",
                                          "XATTR_WRITES", "OPENDIRS")) + ("STDIO_OPENS", "STDIO_SEEKS")
SERVER_META_CALLS = tuple(c for c in META_CALLS if not c.endswith("_SEEKS"))
MPIIO_WRITES = ("MPIIO_INDEP_WRITES", "MPIIO_COLL_WRITES", "MPIIO_NB_WRITES", "MPIIO_SHARED_WRITES")
HDF5_SUFFIXES = (".h5", ".hdf5", ".he5", ".hdf", ".nc4")


def v(d: dict, *names: str) -> float:
    total = 0
    get = d.get
    for name in names:
        x = get(name)
        if x:
            total += x
    return total


def small(d: dict, module: str, kind: str) -> float:
    return v(d, *(f"{module}_SIZE_{kind}_{b}" for b in SMALL_BUCKETS))


def extent(d: dict, kind: str) -> int:
    """Bytes from offset 0 to the highest byte read or written (0: none)."""
    return int(max(v(d, f"POSIX_MAX_BYTE_{kind}"), d.get(f"STDIO_MAX_BYTE_{kind}", -1), -1)) + 1


def posix_time(d: dict) -> float:
    return v(d, "POSIX_F_READ_TIME", "POSIX_F_WRITE_TIME", "POSIX_F_META_TIME")


def stdio_time(d: dict) -> float:
    return v(d, "STDIO_F_READ_TIME", "STDIO_F_WRITE_TIME", "STDIO_F_META_TIME")


def mpiio_time(d: dict) -> float:
    return v(d, "MPIIO_F_READ_TIME", "MPIIO_F_WRITE_TIME", "MPIIO_F_META_TIME")


def io_time(d: dict) -> float:
    """Seconds in I/O calls: MPI-IO's time holds the POSIX calls it makes, so the larger of the two."""
    return max(posix_time(d), mpiio_time(d)) + stdio_time(d)


def meta_time(d: dict) -> float:
    return max(v(d, "POSIX_F_META_TIME"), v(d, "MPIIO_F_META_TIME")) + v(d, "STDIO_F_META_TIME")


def uses_mpiio(d: dict) -> bool:
    return v(d, "MPIIO_INDEP_OPENS", "MPIIO_COLL_OPENS") > 0


def pct(x: float) -> str:
    return f"{100 * x:.0f} %" if x >= 0.01 or x == 0 else f"{100 * x:.2f} %"


def secs(s: float) -> str:
    if s >= 1:
        return f"{s:.2f} s"
    if s >= 1e-3:
        return f"{s * 1e3:.1f} ms"
    return f"{s * 1e6:.0f} us"


def n(x: float) -> str:
    return f"{int(x):,}"


@dataclass
class Finding:
    id: str
    files: list[str]
    cost: float                      # seconds of the job's I/O time it explains
    mode: str                        # the sluice mode that fixes it ("profile": none does)
    text: str                        # the evidence in one sentence
    counters: dict[str, float]
    layout: list[str] = field(default_factory=list)
    hints: list[str] = field(default_factory=list)
    mpi_info: dict[str, str] = field(default_factory=dict)
    toml: dict[str, dict[str, str]] = field(default_factory=dict)
    gain: dict | None = None
    in_effect: bool = False
    partial: bool = False            # in effect, but cutting the calls less than IN_EFFECT_RATIO times
    cap: str | None = None           # highest severity the evidence supports
    layout_dirs: list[str] = field(default_factory=list)   # filled in once paths are grouped
    # set by advise()
    severity: str = "low"
    paths: list[str] = field(default_factory=list)
    share: float = 0.0


@dataclass
class Context:
    job: Job
    files: list[FileTotals]
    T: float                                          # the job's I/O time (s, summed over processes)
    proc_time: float                                  # the processes' run time (s, summed)
    per_proc: dict[str, dict[int, dict[str, float]]]  # path -> pid -> app counters
    rank: dict[int, int]                              # pid -> MPI rank (-1: none)
    hosts: int
    claimed: set[str] = field(default_factory=set)
    shared_pids: set[int] = field(default_factory=set)   # rows of Darshan's reduced shared records

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


def context(job: Job) -> Context:
    per_proc = per_process_app(job)
    rank = {log.pid: log.rank for log in job.logs}
    files = [f for f in job.files if is_real(f.path)]
    T = sum(io_time(f.app) for f in job.files)
    hosts = len({l.info.get("host", "?") for l in job.logs}) or 1
    shared = {l.pid for l in job.logs if SHARED in l.info}
    return Context(job, files, T, sum(l.runtime for l in job.logs), per_proc, rank, hosts, shared_pids=shared)


def cut(f: FileTotals, counter: str) -> float:
    """How many times fewer of these calls reached the file system than the program made."""
    a, s = v(f.app, counter), v(f.fs, counter)
    return a / s if s else (float("inf") if a else 1.0)


def coalesced(f: FileTotals, counter: str) -> bool:
    """The fs side made far fewer of these calls than the program: a mode already works on this file."""
    a, s = v(f.app, counter), v(f.fs, counter)
    return a > 0 and s * th.IN_EFFECT_RATIO <= a


def staged(f: FileTotals) -> bool:
    """The file system saw the file only after the program closed it, or not while the process ran
    (stage mode published it, or left it on the tier)."""
    if v(f.app, "POSIX_OPENS") > 0 and v(f.fs, "POSIX_OPENS") == 0:
        return True
    a_close = v(f.app, "POSIX_F_CLOSE_END_TIMESTAMP")
    s_open = v(f.fs, "POSIX_F_OPEN_START_TIMESTAMP")
    return a_close > 0 and s_open >= a_close


def consecutive_share(f: FileTotals, kind: str, procs: int) -> float:
    """Accesses continuing the previous one, of those that could (each process's first cannot)."""
    calls = v(f.app, f"POSIX_{kind}S")
    return v(f.app, f"POSIX_CONSEC_{kind}S") / max(1.0, calls - procs)


def _fpp_layout(ctx: Context, files: list[FileTotals]) -> bool:
    """Files each written by one process, by several processes in all: file per process."""
    writers = [ctx.writers(f) for f in files]
    return len(files) >= 2 and all(len(w) == 1 for w in writers) and len(set().union(*writers)) >= 2


def _per_call_gain(items: list[tuple[float, float, float, float]], unit: int, what: str,
                   unit_name: str) -> dict | None:
    """items: (calls, small calls, bytes, seconds) per file. Calls saved x measured seconds per call."""
    saved_s, before, after = 0.0, 0, 0
    for calls, smalls, nbytes, t in items:
        if calls <= 0:
            continue
        left = math.ceil(nbytes / unit) + (calls - smalls)
        saved = max(0.0, calls - left)
        saved_s += saved * t / calls
        before += int(calls)
        after += int(min(calls, left))
    if saved_s <= 0:
        return None
    per_call = sum(t for *_, t in items) / max(1, sum(c for c, *_ in items))
    return {"seconds": saved_s,
            "how": f"{n(before - after)} {what} saved ({n(before)} -> about {n(after)}: the small ones coalesced "
                   f"into {unit_name}) x {secs(per_call)} measured per call; an upper bound that holds where a "
                   f"call's cost is mostly its latency (Lustre, GPFS, NFS), less on a local file system"}


# --------------------------------------------------------------------------
# the checks, in the order they claim files


def small_files(ctx: Context) -> list[Finding]:
    """Many small files, each used by one process: created, written, reopened, renamed or deleted."""
    chosen = []
    for f in ctx.files:
        a = f.app
        if uses_mpiio(a) or ctx.procs(f) != 1:
            continue
        touched = v(a, "POSIX_BYTES_WRITTEN", "STDIO_BYTES_WRITTEN") > 0 or v(a, "POSIX_UNLINKS", "POSIX_RENAMES") > 0
        if not touched or max(extent(a, "WRITTEN"), extent(a, "READ")) > th.SMALL_FILE_BYTES:
            continue
        if v(a, "POSIX_OPENS", "STDIO_OPENS") == 0:
            continue
        chosen.append(f)
    # a pattern of directories: a lone small file elsewhere is another case (small-writes, say)
    per_dir: dict[str, int] = defaultdict(int)
    for f in chosen:
        per_dir[dirname(f.path)] += 1
    chosen = [f for f in chosen if per_dir[dirname(f.path)] >= th.SMALL_FILES_PER_DIR]
    if len(chosen) < th.SMALL_FILES_MIN:
        return []
    ctx.claimed.update(f.path for f in chosen)
    done = [f for f in chosen if staged(f)]
    todo = [f for f in chosen if not staged(f)] or done
    cost = sum(io_time(f.app) for f in todo)
    opens = v_sum(todo, "POSIX_OPENS", "STDIO_OPENS")
    mt, wt = sum(meta_time(f.app) for f in todo), sum(v(f.app, "POSIX_F_WRITE_TIME", "STDIO_F_WRITE_TIME")
                                                     for f in todo)
    nbytes = v_sum(todo, "POSIX_BYTES_WRITTEN", "STDIO_BYTES_WRITTEN")
    writers = set().union(*(ctx.writers(f) for f in todo))
    unl, ren = v_sum(todo, "POSIX_UNLINKS"), v_sum(todo, "POSIX_RENAMES")
    in_effect = todo is done
    text = (f"{n(len(todo))} files of at most {human_bytes(th.SMALL_FILE_BYTES)}, each used by one process "
            f"({n(len(writers))} process{'es' if len(writers) != 1 else ''} in all): {n(opens)} opens, "
            f"{human_bytes(nbytes)} written"
            + (f", {n(unl)} unlinks" if unl else "") + (f", {n(ren)} renames" if ren else "")
            + f"; {secs(mt)} in metadata calls and {secs(wt)} in writes")
    if in_effect:
        text += "; stage mode is in effect (the file system saw each file only after the program closed it)"
    elif done:
        text += f"; {n(len(done))} more were already staged"
    f = Finding("file-per-process-small-files", [x.path for x in todo], cost, "stage", text,
                {"files": len(todo), "POSIX_OPENS": v_sum(todo, "POSIX_OPENS"), "STDIO_OPENS": v_sum(todo, "STDIO_OPENS"),
                 "POSIX_BYTES_WRITTEN": v_sum(todo, "POSIX_BYTES_WRITTEN"), "POSIX_UNLINKS": unl, "POSIX_RENAMES": ren,
                 "POSIX_F_META_TIME": v_sum(todo, "POSIX_F_META_TIME"),
                 "POSIX_F_WRITE_TIME": v_sum(todo, "POSIX_F_WRITE_TIME")},
                in_effect=in_effect)
    f.layout = ["lfs setstripe -c 1 {dir}"]
    f.hints = ["Lustre 2.11 or later: Data-on-MDT keeps files this small on the metadata server "
               "(lfs setstripe -E 1M -L mdt -E -1 -c 1 DIR, on an empty directory)",
               "in the code: fewer, larger files (one file per process per output step, or a shared file)"]
    if not in_effect:
        f.gain = {"seconds": cost,
                  "how": f"the {secs(cost)} the program spent creating, writing and closing these files on the "
                         "shared file system; in stage mode close returns once the file is on the node-local tier "
                         "and background drainers publish it (the tier's own, local cost is not subtracted)"}
    return [f]


def v_sum(files: list[FileTotals], *names: str) -> float:
    return sum(v(f.app, *names) for f in files)


def common_sizes(files: list[FileTotals], module: str = "POSIX", top: int = 4) -> list[tuple[int, int]]:
    """The most common request sizes of these files, (size, calls) most frequent first, from each file's
    four most common sizes (*_ACCESS1..4, counted at run time as Darshan does; empty in logs without them)."""
    counts: dict[int, float] = defaultdict(float)
    for f in files:
        for i in range(1, 5):
            size, c = int(v(f.app, f"{module}_ACCESS{i}_ACCESS")), v(f.app, f"{module}_ACCESS{i}_COUNT")
            if size > 0 and c > 0:
                counts[size] += c
    return [(s, int(c)) for s, c in sorted(counts.items(), key=lambda kv: (-kv[1], -kv[0]))[:top]]


def sizes_text(sizes: list[tuple[int, int]]) -> str:
    return ("; most common sizes " + ", ".join(f"{human_bytes(s)} x {c:,}" for s, c in sizes)) if sizes else ""


def many_opens(ctx: Context) -> list[Finding]:
    out = []
    for group, mode in (("written", "stage"), ("read", "profile")):
        chosen = []
        for f in ctx.files:
            if f.path in ctx.claimed or ctx.max_opens_per_process(f) < th.OPENS_PER_PROCESS:
                continue
            written = v(f.app, "POSIX_BYTES_WRITTEN", "STDIO_BYTES_WRITTEN", "MPIIO_BYTES_WRITTEN") > 0
            if written == (group == "written"):
                chosen.append(f)
        if not chosen:
            continue
        ctx.claimed.update(f.path for f in chosen)
        opens = v_sum(chosen, "POSIX_OPENS", "STDIO_OPENS")
        procs = sum(ctx.procs(f) for f in chosen)
        cost = sum(meta_time(f.app) * max(0.0, v(f.app, "POSIX_OPENS", "STDIO_OPENS") - ctx.procs(f))
                   / max(1.0, v(f.app, "POSIX_OPENS", "STDIO_OPENS")) for f in chosen)
        in_effect = all(coalesced(f, "POSIX_OPENS") for f in chosen) if mode == "stage" else False
        most = max(ctx.max_opens_per_process(f) for f in chosen)
        text = (f"{n(len(chosen))} file{'s' if len(chosen) != 1 else ''} opened {n(opens)} times by {n(procs)} "
                f"process{'es' if procs != 1 else ''} (up to {n(most)} by one process; sluice flags "
                f"{th.OPENS_PER_PROCESS} or more); {secs(sum(meta_time(f.app) for f in chosen))} in metadata calls")
        f = Finding("many-opens-one-file", [x.path for x in chosen], cost, mode, text,
                    {"POSIX_OPENS": v_sum(chosen, "POSIX_OPENS"), "STDIO_OPENS": v_sum(chosen, "STDIO_OPENS"),
                     "max_opens_per_process": most, "POSIX_F_META_TIME": v_sum(chosen, "POSIX_F_META_TIME"),
                     "STDIO_F_META_TIME": v_sum(chosen, "STDIO_F_META_TIME")}, in_effect=in_effect)
        if mode == "stage":
            f.text += "; the program writes them, and in stage mode reopening a staged file costs the file system nothing"
            if in_effect:
                f.text += "; already in effect: the file system saw at least 2 times fewer opens"
            else:
                f.gain = {"seconds": cost, "how": "metadata time of every open after each process's first"}
        f.hints = ["in the code: open the file once and keep the descriptor (or stream) for the run"]
        out.append(f)
    return out


def small_requests(ctx: Context, kind: str) -> list[Finding]:
    """small-writes / small-reads: small POSIX requests that continue each other (buffer mode's case)."""
    K = "WRITE" if kind == "writes" else "READ"
    calls_name, time_name, bytes_name = f"POSIX_{K}S", f"POSIX_F_{K}_TIME", f"POSIX_BYTES_{'WRITTEN' if K == 'WRITE' else 'READ'}"
    job_calls = sum(v(f.app, calls_name) for f in ctx.files if not uses_mpiio(f.app))
    chosen = []
    for f in ctx.files:
        a = f.app
        if uses_mpiio(a) or f.path in ctx.claimed:
            continue
        calls, s = v(a, calls_name), small(a, "POSIX", K)
        if calls == 0 or s / calls <= th.SMALL_SHARE:
            continue
        procs = ctx.procs(f, "WRITTEN" if K == "WRITE" else "READ")
        cs = consecutive_share(f, K, procs)
        if K == "READ" and cs < th.CONSECUTIVE_FOR_BUFFER:
            continue           # scattered small reads: random-reads
        if K == "WRITE" and procs > 1 and cs < th.SCATTERED_MAX_CONSECUTIVE:
            continue           # interleaved writers of one file: small-shared-writes
        chosen.append(f)
    total_small = sum(small(f.app, "POSIX", K) for f in chosen)
    if total_small <= th.SMALL_ABS or not job_calls or total_small / job_calls <= th.SMALL_SHARE:
        return []
    done = [f for f in chosen if coalesced(f, calls_name)]
    partly = [f for f in chosen if not coalesced(f, calls_name) and cut(f, calls_name) >= th.PARTLY_RATIO]
    none = [f for f in chosen if cut(f, calls_name) < th.PARTLY_RATIO]
    todo = none or partly or done
    in_effect, partial = todo is not none, todo is partly
    calls, s = v_sum(todo, calls_name), sum(small(f.app, "POSIX", K) for f in todo)
    nbytes, t = v_sum(todo, bytes_name), v_sum(todo, time_name)
    consec = v_sum(todo, f"POSIX_CONSEC_{K}S")
    cost = sum(v(f.app, time_name) * small(f.app, "POSIX", K) / max(1.0, v(f.app, calls_name)) for f in todo)
    verb = "write" if K == "WRITE" else "read"
    text = (f"{n(s)} of {n(calls)} POSIX {verb}s ({pct(s / calls)}) are of 1 MiB or less (mean "
            f"{human_bytes(nbytes / max(1, calls))}), {pct(consec / max(1, calls))} continue the previous one; "
            f"{n(len(todo))} file{'s' if len(todo) != 1 else ''}, {secs(t)} in {verb}s "
            f"(Drishti flags more than {pct(th.SMALL_SHARE)} and {th.SMALL_ABS:,})" + sizes_text(common_sizes(todo)))
    fs_calls = sum(v(f.fs, calls_name) for f in todo)
    if partial:
        switches = v_sum(todo, "POSIX_RW_SWITCHES")
        text += (f"; a mode already acts on them, but {n(fs_calls)} {verb}s still reached the file system, only "
                 f"{calls / max(1, fs_calls):.1f} times fewer"
                 + (f" (the program switches between reading and writing {n(switches)} times)"
                    if switches > 0.1 * calls else "") + ": the remaining fix is in the code")
    elif in_effect:
        text += (f"; already in effect: {n(fs_calls)} {verb}s reached the file system "
                 f"({calls / max(1, fs_calls):.0f} times fewer)")
    elif done or partly:
        text += f"; {n(len(done) + len(partly))} more file{'s' if len(done) + len(partly) != 1 else ''} already coalesced by a mode"
    fid = f"small-{kind}"
    f = Finding(fid, [x.path for x in todo], cost, "buffer", text,
                {calls_name: calls, f"POSIX_SIZE_{K}_0_100..100K_1M": s, f"POSIX_CONSEC_{K}S": consec,
                 bytes_name: nbytes, time_name: t, f"fs_{calls_name}": fs_calls}, in_effect=in_effect,
                partial=partial)
    if not in_effect:
        unit, name = (th.BUFFER_UNIT, "4 MiB write-behind units") if K == "WRITE" else (th.READAHEAD, "4 MiB read-ahead")
        f.gain = _per_call_gain([(v(x.app, calls_name), small(x.app, "POSIX", K), v(x.app, bytes_name),
                                  v(x.app, time_name)) for x in todo], unit, f"{verb} calls", name)
    if K == "WRITE" and _fpp_layout(ctx, todo):
        f.layout = ["lfs setstripe -c 1 {dir}"]
    if any(x.path.endswith(".nc") for x in todo):
        f.hints.append("netCDF: larger chunks or a larger chunk cache (nc_set_chunk_cache) make fewer, larger "
                       "requests; the classic formats: a larger buffer (nc__create/nc__open bufrsizehint)")
    return [f]


def small_shared_writes(ctx: Context) -> list[Finding]:
    chosen = []
    for f in ctx.files:
        a = f.app
        if uses_mpiio(a) or f.path in ctx.claimed:
            continue
        procs = ctx.procs(f, "WRITTEN")
        w, s = v(a, "POSIX_WRITES"), small(a, "POSIX", "WRITE")
        if procs < 2 or w == 0 or s / w <= th.SMALL_SHARE:
            continue
        if consecutive_share(f, "WRITE", procs) >= th.SCATTERED_MAX_CONSECUTIVE:
            continue
        chosen.append(f)
    s = sum(small(f.app, "POSIX", "WRITE") for f in chosen)
    if s <= th.SMALL_ABS:
        return []
    w, t = v_sum(chosen, "POSIX_WRITES"), v_sum(chosen, "POSIX_F_WRITE_TIME")
    procs = max(ctx.procs(f, "WRITTEN") for f in chosen)
    scattered = v(sum_fs(chosen), "POSIX_FALLBACK_SCATTERED")
    cost = sum(v(f.app, "POSIX_F_WRITE_TIME") * small(f.app, "POSIX", "WRITE") / max(1.0, v(f.app, "POSIX_WRITES"))
               for f in chosen)
    text = (f"{n(s)} of {n(w)} POSIX writes ({pct(s / max(1, w))}) to {n(len(chosen))} shared "
            f"file{'s' if len(chosen) != 1 else ''} are of 1 MiB or less, from up to {procs} processes whose writes "
            f"interleave ({pct(v_sum(chosen, 'POSIX_CONSEC_WRITES') / max(1, w))} continue the previous one); "
            f"{secs(t)} in writes (Drishti: small requests to a shared file, > {pct(th.SMALL_SHARE)} and "
            f"{th.SMALL_ABS:,})" + sizes_text(common_sizes(chosen)))
    if scattered:
        text += f"; buffer mode found them too scattered to coalesce {n(scattered)} times (POSIX_FALLBACK_SCATTERED)"
    f = Finding("small-shared-writes", [x.path for x in chosen], cost, "profile", text,
                {"POSIX_WRITES": w, "POSIX_SIZE_WRITE_0_100..100K_1M": s,
                 "POSIX_CONSEC_WRITES": v_sum(chosen, "POSIX_CONSEC_WRITES"), "POSIX_F_WRITE_TIME": t,
                 "processes": procs, "POSIX_FALLBACK_SCATTERED": scattered})
    f.hints = ["buffer mode cannot coalesce interleaved pieces without writing bytes the program did not "
               "write, so no mode helps as the program is",
               "in the code: let each process write one contiguous block, or write the pieces through MPI-IO "
               "collective calls (MPI_File_write_at_all) and run with --mode acb, which aggregates them into "
               "large stripe-aligned writes"]
    return [f]


def sum_fs(files: list[FileTotals]) -> dict[str, float]:
    out: dict[str, float] = defaultdict(float)
    for f in files:
        for k, x in f.fs.items():
            out[k] += x or 0
    return out


def random_reads(ctx: Context) -> list[Finding]:
    chosen, rnd_total = [], 0.0
    job_reads = sum(v(f.app, "POSIX_READS") for f in ctx.files)
    for f in ctx.files:
        r = v(f.app, "POSIX_READS")
        if r == 0 or f.path in ctx.claimed:
            continue
        rnd = max(0.0, r - v(f.app, "POSIX_SEQ_READS") - ctx.procs(f, "READ"))
        if rnd / r > th.RANDOM_SHARE:
            chosen.append((f, rnd))
            rnd_total += rnd
    if rnd_total <= th.RANDOM_ABS or not job_reads or rnd_total / job_reads <= th.RANDOM_SHARE:
        return []
    files = [f for f, _ in chosen]
    r, t = v_sum(files, "POSIX_READS"), v_sum(files, "POSIX_F_READ_TIME")
    nbytes = v_sum(files, "POSIX_BYTES_READ")
    cost = sum(v(f.app, "POSIX_F_READ_TIME") * rnd / max(1.0, v(f.app, "POSIX_READS")) for f, rnd in chosen)
    text = (f"{n(rnd_total)} of {n(r)} POSIX reads ({pct(rnd_total / r)}) start before the end of the previous "
            f"read, {pct(v_sum(files, 'POSIX_CONSEC_READS') / r)} continue it (mean {human_bytes(nbytes / r)}); "
            f"{secs(t)} in reads (Drishti flags more than {pct(th.RANDOM_SHARE)} and {th.RANDOM_ABS:,})")
    f = Finding("random-reads", [x.path for x in files], cost, "profile", text,
                {"POSIX_READS": r, "POSIX_SEQ_READS": v_sum(files, "POSIX_SEQ_READS"),
                 "POSIX_CONSEC_READS": v_sum(files, "POSIX_CONSEC_READS"), "random_reads": rnd_total,
                 "POSIX_BYTES_READ": nbytes, "POSIX_F_READ_TIME": t})
    f.hints = ["no sluice mode helps: buffer mode's read-ahead follows sequential reads only, so random reads "
               "pay for none of it",
               "in the code: sort the requests by offset and read larger contiguous blocks; read a file that fits "
               "in memory once, whole",
               "MPI-IO: collective reads (MPI_File_read_at_all) with romio_cb_read=enable; HDF5: a chunk cache "
               "that holds the chunks read again (H5Pset_chunk_cache)"]
    return [f]


def redundant(ctx: Context, K: str) -> list[Finding]:
    """redundant-reads / redundant-writes: more bytes moved than the extent touched."""
    word = "READ" if K == "READ" else "WRITTEN"
    chosen, excess_total = [], 0.0
    for f in ctx.files:
        nbytes = v(f.app, f"POSIX_BYTES_{word}", f"STDIO_BYTES_{word}")
        ext = extent(f.app, word)
        excess = nbytes - ext
        if ext and excess > th.REDUNDANT_SHARE * ext and excess >= th.REDUNDANT_MIN_BYTES:
            chosen.append((f, excess))
            excess_total += excess
    if not chosen:
        return []
    files = [f for f, _ in chosen]
    tname = "POSIX_F_READ_TIME" if K == "READ" else "POSIX_F_WRITE_TIME"
    sname = "STDIO_F_READ_TIME" if K == "READ" else "STDIO_F_WRITE_TIME"
    nbytes = v_sum(files, f"POSIX_BYTES_{word}", f"STDIO_BYTES_{word}")
    ext = sum(extent(f.app, word) for f in files)
    cost = sum(v(f.app, tname, sname) * ex / max(1.0, v(f.app, f"POSIX_BYTES_{word}", f"STDIO_BYTES_{word}"))
               for f, ex in chosen)
    multi = [f for f in files if ctx.procs(f, word) > 1]
    verb = "read" if K == "READ" else "written"
    text = (f"{human_bytes(nbytes)} {verb} from {n(len(files))} file{'s' if len(files) != 1 else ''} whose "
            f"{verb} extent is {human_bytes(ext)}: {human_bytes(excess_total)} ({pct(excess_total / max(1, nbytes))}) "
            f"{'read' if K == 'READ' else 'written'} more than once"
            + (f"; {n(len(multi))} of the files by several processes" if multi else ""))
    fid = "redundant-reads" if K == "READ" else "redundant-writes"
    f = Finding(fid, [x.path for x in files], cost, "profile", text,
                {f"POSIX_BYTES_{word}": v_sum(files, f"POSIX_BYTES_{word}"),
                 f"STDIO_BYTES_{word}": v_sum(files, f"STDIO_BYTES_{word}"), f"extent_{verb}": ext,
                 "bytes_again": excess_total, tname: v_sum(files, tname)})
    f.gain = {"seconds": cost, "how": f"{verb.replace('written', 'write')} time x the share of bytes moved more "
                                      "than once, if each byte moved once"}
    if K == "READ":
        f.hints = (["each of several processes reads the same bytes: read them once (one rank per node) and "
                    "share them (MPI_Bcast, or a node-local copy)"] if multi else []) + \
                  ["a process reads the same bytes again: keep them in memory"]
    else:
        if any(x.path.endswith(".nc") for x in files):
            f.hints.append("netCDF fills every variable before the data is written: nc_set_fill(ncid, NC_NOFILL, "
                           "&old) (nf90_set_fill in Fortran) writes the data only")
        if any(x.path.endswith(HDF5_SUFFIXES) for x in files):
            f.hints.append("HDF5: H5Pset_fill_time(dcpl, H5D_FILL_TIME_NEVER) skips writing fill values")
        f.hints.append("in the code: write each byte once per output step (no pre-fill, no rewrite of headers "
                       "after every record)")
    return [f]


def _measured_misalignment(f: FileTotals) -> tuple[int, int, int] | None:
    """(requests, requests off the file's alignment, the alignment) from the counters a log measured
    (Darshan's POSIX_FILE_NOT_ALIGNED against POSIX_FILE_ALIGNMENT, st_blksize at open); None when the log
    has no such count. Only files of requests of 100 KiB or more on the mean: smaller ones are small
    requests, whatever their alignment."""
    a = f.app
    align = int(v(a, "POSIX_FILE_ALIGNMENT"))
    ops = int(v(a, "POSIX_WRITES", "POSIX_READS"))
    if align <= 0 or ops == 0:
        return None
    if v(a, "POSIX_BYTES_WRITTEN", "POSIX_BYTES_READ") / ops < th.MISALIGNED_MIN_SIZE:
        return ops, 0, align
    return ops, int(v(a, "POSIX_FILE_NOT_ALIGNED")), align


def misaligned(ctx: Context) -> list[Finding]:
    chosen = []
    measured: list[tuple[FileTotals, int, int, int]] = []
    for f in ctx.files:
        a = f.app
        m = _measured_misalignment(f)
        if m is not None:
            ops, bad, align = m
            if bad / ops > th.MISALIGNED_SHARE:
                measured.append((f, ops, bad, align))
            continue
        w, b = int(v(a, "POSIX_WRITES")), int(v(a, "POSIX_BYTES_WRITTEN"))
        if w < 2 or b % w or b // w < th.MISALIGNED_MIN_SIZE:
            continue
        if not any(v(a, f"POSIX_SIZE_WRITE_{bk}") == w for bk in ALL_BUCKETS):
            continue        # sizes differ: alignment cannot be inferred
        if extent(a, "WRITTEN") != b or consecutive_share(f, "WRITE", ctx.procs(f, "WRITTEN")) < 0.9:
            continue        # not one contiguous run from offset 0
        size = b // w
        period = th.ALIGNMENT // math.gcd(size, th.ALIGNMENT)
        bad = w - math.ceil(w / period)
        if bad / w > th.MISALIGNED_SHARE:
            chosen.append((f, size, bad))
    if measured:
        return [_misaligned_measured(measured)]
    if not chosen:
        return []
    files = [f for f, *_ in chosen]
    done = [f for f in files if coalesced(f, "POSIX_WRITES")]
    w, bad = v_sum(files, "POSIX_WRITES"), sum(x for *_, x in chosen)
    sizes = sorted({s for _, s, _ in chosen})
    t = v_sum(files, "POSIX_F_WRITE_TIME")
    cost = sum(v(f.app, "POSIX_F_WRITE_TIME") * x / max(1.0, v(f.app, "POSIX_WRITES")) for f, _, x in chosen)
    in_effect = len(done) == len(files)
    text = (f"{n(bad)} of {n(w)} POSIX writes ({pct(bad / w)}) start off a {human_bytes(th.ALIGNMENT)} boundary: "
            f"the files are written front to back in writes of {', '.join(f'{s:,}' for s in sizes[:4])} bytes "
            f"(inferred from the counters: one size bucket, bytes = extent, consecutive); {secs(t)} in writes "
            f"(Drishti flags more than {pct(th.MISALIGNED_SHARE)})")
    mode = "buffer" if max(sizes) < th.BUFFER_UNIT else "profile"
    if in_effect:
        text += "; already in effect: a mode coalesced them into aligned units"
    f = Finding("misaligned", [x.path for x in files], cost, mode, text,
                {"POSIX_WRITES": w, "misaligned_writes": bad, "request_bytes": sizes[0] if len(sizes) == 1 else sizes,
                 "POSIX_BYTES_WRITTEN": v_sum(files, "POSIX_BYTES_WRITTEN"), "POSIX_F_WRITE_TIME": t,
                 "alignment": th.ALIGNMENT}, in_effect=in_effect)
    if mode == "buffer":
        f.hints.append("buffer mode writes whole units aligned to the unit (4 MiB, rounded to the Lustre stripe)")
    _alignment_hints(f, files)
    return [f]


def _alignment_hints(f: Finding, files: list[FileTotals]) -> None:
    if any(x.path.endswith(HDF5_SUFFIXES + (".nc",)) for x in files):
        f.hints.append("HDF5: H5Pset_alignment(fapl, 1048576, 1048576) puts every object of 1 MiB or more on a "
                       "1 MiB boundary; netCDF-4 (4.9 or later): nc_set_alignment(1048576, 1048576)")
    if any(uses_mpiio(x.app) for x in files):
        f.mpi_info = {"striping_unit": str(th.ALIGNMENT)}
        f.hints.append("MPI-IO: collective writes (romio_cb_write=enable) give the aggregators file domains "
                       "aligned to the stripe (striping_unit)")
    f.hints.append("in the code: write in multiples of the stripe size (1 MiB by default on Lustre)")


def _misaligned_measured(measured: list[tuple[FileTotals, int, int, int]]) -> Finding:
    """`misaligned` where the log counted requests off the file system's alignment."""
    files = [f for f, *_ in measured]
    ops, bad = sum(o for _, o, _, _ in measured), sum(b for *_, b, _ in measured)
    aligns = sorted({al for *_, al in measured})
    t = v_sum(files, "POSIX_F_WRITE_TIME", "POSIX_F_READ_TIME")
    cost = sum(v(f.app, "POSIX_F_WRITE_TIME", "POSIX_F_READ_TIME") * b / o for f, o, b, _ in measured)
    nbytes = v_sum(files, "POSIX_BYTES_WRITTEN", "POSIX_BYTES_READ")
    mean = nbytes / max(1, ops)
    text = (f"{n(bad)} of {n(ops)} POSIX reads and writes ({pct(bad / ops)}) start off the file system's "
            f"{' / '.join(human_bytes(x) for x in aligns)} alignment (POSIX_FILE_NOT_ALIGNED), mean request "
            f"{human_bytes(mean)}; {n(len(files))} file{'s' if len(files) != 1 else ''}, {secs(t)} in reads and "
            f"writes (Drishti flags more than {pct(th.MISALIGNED_SHARE)})")
    # buffer mode writes whole aligned units, but only of files written by one process at a time without MPI-IO
    mode = "buffer" if mean < th.BUFFER_UNIT and not any(uses_mpiio(x.app) for x in files) else "profile"
    done = [x for x in files if coalesced(x, "POSIX_WRITES")]
    in_effect = mode == "buffer" and len(done) == len(files)
    if in_effect:
        text += "; already in effect: a mode coalesced them into aligned units"
    f = Finding("misaligned", [x.path for x in files], cost, mode, text,
                {"POSIX_READS+WRITES": ops, "POSIX_FILE_NOT_ALIGNED": bad, "POSIX_FILE_ALIGNMENT": aligns[0],
                 "mean_request_bytes": mean, "POSIX_F_READ+WRITE_TIME": t}, in_effect=in_effect)
    if mode == "buffer":
        f.hints.append("buffer mode writes whole units aligned to the unit (4 MiB, rounded to the Lustre stripe)")
    _alignment_hints(f, files)
    return f


def stdio_heavy(ctx: Context) -> list[Finding]:
    sb = sum(v(f.app, "STDIO_BYTES_READ", "STDIO_BYTES_WRITTEN") for f in ctx.job.files)
    pb = sum(v(f.app, "POSIX_BYTES_READ", "POSIX_BYTES_WRITTEN") for f in ctx.job.files)
    if sb == 0 or sb / (sb + pb) <= th.STDIO_SHARE:
        return []
    files = [f for f in ctx.files if v(f.app, "STDIO_BYTES_READ", "STDIO_BYTES_WRITTEN") > 0]
    calls = v_sum(files, "STDIO_READS", "STDIO_WRITES")
    t = sum(stdio_time(f.app) for f in files)
    text = (f"{human_bytes(sb)} of {human_bytes(sb + pb)} ({pct(sb / (sb + pb))}) moved through stdio streams in "
            f"{n(calls)} calls (mean {human_bytes(sb / max(1, calls))}) on {n(len(files))} "
            f"file{'s' if len(files) != 1 else ''}; {secs(t)} in stdio calls (Drishti flags more than "
            f"{pct(th.STDIO_SHARE)})")
    f = Finding("stdio-heavy", [x.path for x in files], t, "buffer", text,
                {"STDIO_BYTES_READ": v_sum(files, "STDIO_BYTES_READ"),
                 "STDIO_BYTES_WRITTEN": v_sum(files, "STDIO_BYTES_WRITTEN"), "STDIO_READS": v_sum(files, "STDIO_READS"),
                 "STDIO_WRITES": v_sum(files, "STDIO_WRITES"), "STDIO_F_WRITE_TIME": v_sum(files, "STDIO_F_WRITE_TIME"),
                 "STDIO_F_READ_TIME": v_sum(files, "STDIO_F_READ_TIME"),
                 "POSIX_BYTES": pb, "STDIO_BYTES": sb})
    f.hints = ["buffer mode gives each stream on a buffered path a buffer of one unit (4 MiB), so the C library "
               "reaches the kernel in unit-sized pieces; those calls are invisible to sluice, so the saving "
               "cannot be measured from the log",
               "in the code: bulk data through write()/MPI-IO/HDF5, or setvbuf() with a large buffer"]
    return [f]


def metadata_heavy(ctx: Context) -> list[Finding]:
    per_pid: dict[int, float] = defaultdict(float)
    for path, pp in ctx.per_proc.items():
        for pid, d in pp.items():
            who = ctx.members(pid)
            for p in who:
                per_pid[p] += meta_time(d) / len(who)
    slow = {pid: t for pid, t in per_pid.items() if t > th.METADATA_RANK_SECONDS}
    files = [f for f in ctx.files if f.path not in ctx.claimed and meta_time(f.app) > 0]
    mt = sum(meta_time(f.app) for f in files)
    # seeks move a file position in the client: they count in the time but not as calls to a server
    calls = v_sum(files, *SERVER_META_CALLS, "MPIIO_INDEP_OPENS", "MPIIO_COLL_OPENS")
    by_share = ctx.T > 0 and mt / ctx.T >= th.METADATA_SHARE and calls >= th.METADATA_CALLS
    if not slow and not by_share:
        return []
    files.sort(key=lambda f: -meta_time(f.app))
    keep, acc = [], 0.0
    for f in files:            # the files holding 95 % of the metadata time
        keep.append(f)
        acc += meta_time(f.app)
        if acc >= 0.95 * mt:
            break
    written = sum(meta_time(f.app) for f in keep if v(f.app, "POSIX_BYTES_WRITTEN", "STDIO_BYTES_WRITTEN") > 0)
    mode = "stage" if written >= 0.5 * acc else "profile"
    kinds = {k: v_sum(keep, k) for k in META_CALLS if v_sum(keep, k)}
    top = ", ".join(f"{n(x)} {k.split('_', 1)[1].lower()}" for k, x in sorted(kinds.items(), key=lambda kv: -kv[1])[:5])
    text = (f"{secs(mt)} in metadata calls ({pct(mt / ctx.T) if ctx.T else '-'} of the I/O time; sluice flags "
            f"{pct(th.METADATA_SHARE)} with {th.METADATA_CALLS:,} calls besides seeks): {top}")
    if slow:
        text += (f"; {len(slow)} process{'es' if len(slow) != 1 else ''} spent more than "
                 f"{th.METADATA_RANK_SECONDS:.0f} s in them (Drishti's threshold), up to {secs(max(slow.values()))}")
    f = Finding("metadata-heavy", [x.path for x in keep], acc, mode, text,
                {**kinds, "POSIX_F_META_TIME": v_sum(keep, "POSIX_F_META_TIME"),
                 "STDIO_F_META_TIME": v_sum(keep, "STDIO_F_META_TIME"),
                 "MPIIO_F_META_TIME": v_sum(keep, "MPIIO_F_META_TIME"),
                 "processes_over_30s": len(slow)})
    if mode == "stage":
        f.hints.append("stage mode answers stat, access, reopen and unlink of the files it staged from the "
                       "node-local tier")
        f.gain = {"seconds": written, "how": "metadata time on files the program writes, which stage mode "
                                             "keeps off the shared file system (an upper bound)"}
    f.hints.append("in the code: fewer opens, stats and seeks per file (keep files open, cache stat results); "
                   "HDF5: collective metadata (H5Pset_all_coll_metadata_ops, H5Pset_coll_metadata_write)")
    return [f]


def _mpiio_shared(ctx: Context) -> list[FileTotals]:
    return [f for f in ctx.files if uses_mpiio(f.app) and ctx.procs(f) >= 2]


def _stripes(nbytes: float) -> int:
    """Stripe count for a shared file: one stripe per 4 GiB, at least 4, at most 64 (-1: all OSTs)."""
    if nbytes > 256 * th.GIB:
        return -1
    return int(min(64, max(4, math.ceil(nbytes / (4 * th.GIB)))))


def _stripe_size(mean_request: float) -> int:
    """A power of two from 1 to 64 MiB, the largest not above the mean request."""
    s = th.MIB
    while s * 2 <= min(mean_request, 64 * th.MIB):
        s *= 2
    return s


def _size_text(b: int) -> str:
    return f"{b // th.MIB}M" if b % th.MIB == 0 else str(b)


def small_mpiio_writes(ctx: Context) -> list[Finding]:
    chosen = []
    for f in _mpiio_shared(ctx):
        w, s = v(f.app, *MPIIO_WRITES), small(f.app, "MPIIO", "WRITE")
        if w and s / w > th.SMALL_SHARE:
            chosen.append(f)
    s = sum(small(f.app, "MPIIO", "WRITE") for f in chosen)
    if s <= th.SMALL_ABS:
        return []
    ctx.claimed.update(f.path for f in chosen)
    done = [f for f in chosen if coalesced(f, "MPIIO_INDEP_WRITES") or v(f.fs, "MPIIO_ACB_FLUSHES") > 0]
    done_paths = {f.path for f in done}
    todo = [f for f in chosen if f.path not in done_paths] or done
    in_effect = todo is done
    w, s = v_sum(todo, *MPIIO_WRITES), sum(small(f.app, "MPIIO", "WRITE") for f in todo)
    indep = v_sum(todo, "MPIIO_INDEP_WRITES")
    nbytes, t = v_sum(todo, "MPIIO_BYTES_WRITTEN"), v_sum(todo, "MPIIO_F_WRITE_TIME")
    procs = max(ctx.procs(f) for f in todo)
    cost = sum(v(f.app, "MPIIO_F_WRITE_TIME") * small(f.app, "MPIIO", "WRITE") / max(1.0, v(f.app, *MPIIO_WRITES))
               for f in todo)
    text = (f"{n(s)} of {n(w)} MPI-IO writes ({pct(s / w)}) to {n(len(todo))} shared "
            f"file{'s' if len(todo) != 1 else ''} are of 1 MiB or less (mean {human_bytes(nbytes / max(1, w))}), "
            f"{n(indep)} of them independent, from {procs} ranks; {secs(t)} in MPI-IO writes (Drishti's small "
            f"request thresholds, {pct(th.SMALL_SHARE)} and {th.SMALL_ABS:,})" + sizes_text(common_sizes(todo, "MPIIO")))
    if in_effect:
        flushes = sum(v(x.fs, "MPIIO_ACB_FLUSHES") for x in todo)
        text += (f"; already in effect: {n(flushes)} aggregated exchanges (MPIIO_ACB_FLUSHES), "
                 f"{n(sum(v(x.fs, *MPIIO_WRITES) for x in todo))} MPI-IO writes reached the file system")
    f = Finding("small-mpiio-writes", [x.path for x in todo], cost, "acb", text,
                {"MPIIO_WRITES": w, "MPIIO_SIZE_WRITE_0_100..100K_1M": s, "MPIIO_INDEP_WRITES": indep,
                 "MPIIO_COLL_WRITES": v_sum(todo, "MPIIO_COLL_WRITES"), "MPIIO_BYTES_WRITTEN": nbytes,
                 "MPIIO_F_WRITE_TIME": t, "ranks": procs}, in_effect=in_effect)
    size = max(extent(x.app, "WRITTEN") for x in todo)
    stripes = _stripes(size)
    nodes = ctx.hosts
    f.mpi_info = {"romio_cb_write": "enable", "cb_nodes": str(max(1, nodes if stripes < 0 else min(nodes, stripes))),
                  "striping_factor": str(stripes if stripes > 0 else -1), "striping_unit": "1048576"}
    f.toml = {"acb": {"stripe_size": "1M"}}
    f.hints = ["--mode acb packs each rank's writes and has a few aggregator ranks write large stripe-aligned "
               "pieces at MPI_File_sync/close (docs/acb.md)",
               "without sluice: collective writes (MPI_File_write_at_all) with the MPI_Info hints listed"]
    if size >= th.LARGE_SHARED_BYTES:
        f.layout = [f"lfs setstripe -c {stripes} -S 1M {{dir}}"]
    if not in_effect:
        f.gain = _per_call_gain([(v(x.app, *MPIIO_WRITES), small(x.app, "MPIIO", "WRITE"),
                                  v(x.app, "MPIIO_BYTES_WRITTEN"), v(x.app, "MPIIO_F_WRITE_TIME")) for x in todo],
                                th.ACB_WRITE_SIZE, "MPI-IO write calls", "16 MiB aggregator writes")
        if f.gain:
            f.gain["how"] += "; ACB's exchange between ranks is not subtracted"
    return [f]


def no_collective(ctx: Context) -> list[Finding]:
    chosen = []
    for f in _mpiio_shared(ctx):
        if f.path in ctx.claimed or v(f.app, "MPIIO_COLL_OPENS") == 0:
            continue
        indep = v(f.app, "MPIIO_INDEP_WRITES", "MPIIO_INDEP_READS")
        coll = v(f.app, "MPIIO_COLL_WRITES", "MPIIO_COLL_READS")
        if indep > th.COLLECTIVE_ABS and indep / (indep + coll) > th.COLLECTIVE_SHARE:
            chosen.append(f)
    if not chosen:
        return []
    iw, ir = v_sum(chosen, "MPIIO_INDEP_WRITES"), v_sum(chosen, "MPIIO_INDEP_READS")
    cw, cr = v_sum(chosen, "MPIIO_COLL_WRITES"), v_sum(chosen, "MPIIO_COLL_READS")
    t = v_sum(chosen, "MPIIO_F_WRITE_TIME", "MPIIO_F_READ_TIME")
    cost = sum(v(f.app, "MPIIO_F_WRITE_TIME", "MPIIO_F_READ_TIME") * v(f.app, "MPIIO_INDEP_WRITES", "MPIIO_INDEP_READS")
               / max(1.0, v(f.app, "MPIIO_INDEP_WRITES", "MPIIO_INDEP_READS", "MPIIO_COLL_WRITES", "MPIIO_COLL_READS"))
               for f in chosen)
    mode = "acb" if iw >= ir else "profile"
    text = (f"{n(iw + ir)} independent MPI-IO calls ({n(iw)} writes, {n(ir)} reads) against {n(cw + cr)} collective "
            f"ones on {n(len(chosen))} file{'s' if len(chosen) != 1 else ''} opened by several ranks; "
            f"{secs(t)} in MPI-IO reads and writes (Drishti flags more than {pct(th.COLLECTIVE_SHARE)} independent "
            f"and {th.COLLECTIVE_ABS:,})")
    f = Finding("no-collective-mpiio", [x.path for x in chosen], cost, mode, text,
                {"MPIIO_INDEP_WRITES": iw, "MPIIO_INDEP_READS": ir, "MPIIO_COLL_WRITES": cw, "MPIIO_COLL_READS": cr,
                 "MPIIO_F_WRITE_TIME": v_sum(chosen, "MPIIO_F_WRITE_TIME"),
                 "MPIIO_F_READ_TIME": v_sum(chosen, "MPIIO_F_READ_TIME")})
    f.mpi_info = {"romio_cb_write": "enable", "romio_cb_read": "enable", "cb_nodes": str(ctx.hosts)}
    f.hints = ["collective calls (MPI_File_write_at_all, MPI_File_read_at_all) let MPI-IO merge the ranks' "
               "requests through aggregators"]
    if mode == "acb":
        f.hints.insert(0, "--mode acb aggregates the independent writes of shared files without a code change")
    return [f]


def _reduced_imbalance(ctx: Context) -> list[Finding]:
    """rank-imbalance from Darshan's records reduced over all ranks: each keeps the slowest and fastest
    rank's time and bytes (POSIX_F_SLOWEST_RANK_TIME, ...) and the ranks' summed time, so the slowest
    rank's time is set against the mean, as for per-rank logs."""
    nranks = len({p for p, r in ctx.rank.items() if r >= 0 and p not in ctx.shared_pids})
    rows = []
    for f in ctx.files:
        d = next((d for pid, d in ctx.per_proc.get(f.path, {}).items() if pid in ctx.shared_pids), None)
        if d is None or nranks < 2:
            continue
        slow, fast = v(d, "POSIX_F_SLOWEST_RANK_TIME"), v(d, "POSIX_F_FASTEST_RANK_TIME")
        mean = posix_time(d) / nranks
        if slow > 0 and 1 - mean / slow > th.STRAGGLER_SHARE:
            rows.append((f, d, slow, fast, mean))
    if not rows:
        return []
    rows.sort(key=lambda r: r[4] - r[2])
    f0, d, slow, fast, mean = rows[0]
    bslow, bfast = v(d, "POSIX_SLOWEST_RANK_BYTES"), v(d, "POSIX_FASTEST_RANK_BYTES")
    bmax = max(bslow, bfast)
    size_imb = abs(bslow - bfast) / bmax if bmax else 0.0
    balanced = size_imb <= th.IMBALANCE_SIZE
    excess = sum(sl - mn for _, _, sl, _, mn in rows)
    text = (f"{n(len(rows))} file{'s' if len(rows) != 1 else ''} shared by all {nranks} ranks (records Darshan "
            f"reduced over the ranks): on {f0.path}, the slowest rank (rank {int(v(d, 'POSIX_SLOWEST_RANK'))}) spent "
            f"{secs(slow)} in its POSIX calls, the fastest {secs(fast)}, the mean {secs(mean)} "
            f"({pct(1 - mean / slow)} of the slowest rank's time above the mean; Drishti flags "
            f"{pct(th.STRAGGLER_SHARE)}); the slowest and fastest ranks' bytes differ by {pct(size_imb)} "
            f"(Drishti flags {pct(th.IMBALANCE_SIZE)})")
    if balanced:
        text += ("; they move about the same bytes, so the cause is not the data's distribution but contention "
                 "(a busy node, a slow server, the file's stripes)")
    f = Finding("rank-imbalance", [r[0].path for r in rows if is_real(r[0].path)], min(excess, ctx.T), "profile",
                text, {"ranks": nranks, "slowest_rank": int(v(d, "POSIX_SLOWEST_RANK")), "slowest_io_time": slow,
                       "fastest_rank": int(v(d, "POSIX_FASTEST_RANK")), "fastest_io_time": fast,
                       "mean_io_time": mean, "max_bytes_per_rank": bslow, "min_bytes_per_rank": bfast},
                cap="medium" if balanced else None)
    f.gain = {"seconds": excess, "how": "if every rank spent the mean time on the shared files: the slowest "
                                        "rank's excess over the mean, which the other ranks wait for"}
    f.hints = (["balance the data across ranks; collective I/O spreads a shared file's data over its "
                "aggregators whatever each rank holds"] if not balanced else []) + \
              ["a shared file on one stripe makes every rank wait on one server: more stripes (lfs setstripe -c)"]
    return [f]


def rank_imbalance(ctx: Context) -> list[Finding]:
    ranks = {pid: r for pid, r in ctx.rank.items() if r >= 0}
    if len(ranks) < 2:
        return []
    if any(SHARED in l.info and l.records for l in ctx.job.logs):
        return _reduced_imbalance(ctx)   # a Darshan log: the shared files' per-rank times are reduced
    t: dict[int, float] = defaultdict(float)
    b: dict[int, float] = defaultdict(float)
    where: dict[int, dict[str, float]] = defaultdict(dict)
    for path, pp in ctx.per_proc.items():
        for pid, d in pp.items():
            if pid in ranks:
                t[pid] += io_time(d)
                b[pid] += v(d, "POSIX_BYTES_READ", "POSIX_BYTES_WRITTEN", "STDIO_BYTES_READ", "STDIO_BYTES_WRITTEN")
                where[pid][path] = io_time(d)
    for pid in ranks:
        t.setdefault(pid, 0.0)
        b.setdefault(pid, 0.0)
    tmax = max(t.values())
    mean = sum(t.values()) / len(t)
    if tmax <= 0 or 1 - mean / tmax <= th.STRAGGLER_SHARE:
        return []
    slow = max(t, key=lambda p: (t[p], -ranks[p]))
    fast = min(t, key=lambda p: (t[p], ranks[p]))
    bmax, bmin = max(b.values()), min(b.values())
    size_imb = (bmax - bmin) / bmax if bmax else 0.0
    excess = tmax - mean
    balanced = size_imb <= th.IMBALANCE_SIZE
    top = sorted(where[slow].items(), key=lambda kv: -kv[1])[:3]
    text = (f"rank {ranks[slow]} spends {secs(tmax)} in I/O calls, rank {ranks[fast]} {secs(t[fast])}, the mean "
            f"of {len(t)} ranks is {secs(mean)} ({pct(1 - mean / tmax)} of the slowest rank's time above the mean; "
            f"Drishti flags {pct(th.STRAGGLER_SHARE)}): in the I/O phases the other ranks wait up to "
            f"{secs(excess)} for it; bytes per rank differ by {pct(size_imb)} (Drishti flags "
            f"{pct(th.IMBALANCE_SIZE)})")
    if balanced:
        text += ("; the ranks move about the same bytes, so the cause is not the data's distribution but "
                 "contention (a busy node, a slow server, the files' stripes)")
    f = Finding("rank-imbalance", [p for p, _ in top if is_real(p)], min(excess, ctx.T), "profile", text,
                {"ranks": len(t), "slowest_rank": ranks[slow], "slowest_io_time": tmax,
                 "fastest_rank": ranks[fast], "fastest_io_time": t[fast], "mean_io_time": mean,
                 "max_bytes_per_rank": bmax, "min_bytes_per_rank": bmin},
                cap="medium" if balanced else None)
    f.gain = {"seconds": excess, "how": f"if every rank spent the mean I/O time: the slowest rank's excess over "
                                        f"the mean, which the other {len(t) - 1} ranks wait for"}
    f.hints = (["balance the data (and the files) across ranks; collective I/O spreads a shared file's data "
                "over its aggregators whatever each rank holds"] if not balanced else []) + \
              ["a shared file on one stripe makes every rank wait on one server: more stripes (lfs setstripe -c)"]
    return [f]


def _layout_of(f: FileTotals) -> tuple[int, int, bool] | None:
    """The file's layout as the file system gave it at open (stripe count, -1
    for all; stripe size; on CephFS), or None where the log has none (not
    CephFS or Lustre, or a log of sluice before these counters)."""
    size = int(v(f.app, "POSIX_STRIPE_SIZE"))
    if size <= 0:
        return None
    return int(f.app.get("POSIX_STRIPE_COUNT", 0)), size, v(f.app, "POSIX_OBJECT_SIZE") > 0


def _layouts_text(known: list[tuple[int, int, bool]]) -> str:
    """'1 stripe of 4.0 MiB (12 files), 4 stripes of 1.0 MiB (2)': the layouts, most files first."""
    counts: dict[tuple[int, int], int] = defaultdict(int)
    for c, size, _ in known:
        counts[(c, size)] += 1
    parts = []
    for i, ((c, size), k) in enumerate(sorted(counts.items(), key=lambda x: -x[1])):
        stripes = "all stripes" if c < 0 else f"{c} stripe{'s' if c != 1 else ''}"
        parts.append(f"{stripes} of {human_bytes(size)} ({n(k)}{' files' if i == 0 and k != 1 else ''})")
    return ", ".join(parts)


def _layout_command(ceph: bool, stripes: int, size: int | None) -> str:
    """The command that gives the files created in {dir} this layout."""
    if ceph:
        cmd = f"setfattr -n ceph.dir.layout.stripe_count -v {stripes if stripes > 0 else 64} {{dir}}"
        return cmd + (f" && setfattr -n ceph.dir.layout.stripe_unit -v {size} {{dir}}" if size else "")
    return f"lfs setstripe -c {stripes}" + (f" -S {_size_text(size)}" if size else "") + " {dir}"


def file_per_process(ctx: Context) -> list[Finding]:
    """Large files, each written by one process (layout advice: one stripe each)."""
    by_dir: dict[str, list[FileTotals]] = defaultdict(list)
    for f in ctx.files:
        if f.path in ctx.claimed or uses_mpiio(f.app) and ctx.procs(f) > 1:
            continue
        if extent(f.app, "WRITTEN") >= th.SMALL_FILE_BYTES and len(ctx.writers(f)) == 1:
            by_dir[dirname(f.path)].append(f)
    files = [f for fs in by_dir.values() if _fpp_layout(ctx, fs) for f in fs]
    # files the log shows on one stripe already have the layout this finding is about
    files = [f for f in files if (_layout_of(f) or (0,))[0] != 1]
    if len(files) < 2:
        return []
    known = [lay for lay in map(_layout_of, files) if lay]
    writers = set().union(*(ctx.writers(f) for f in files))
    nbytes = v_sum(files, "POSIX_BYTES_WRITTEN", "STDIO_BYTES_WRITTEN")
    cost = sum(io_time(f.app) for f in files)
    text = (f"{n(len(files))} files of {human_bytes(min(extent(f.app, 'WRITTEN') for f in files))} to "
            f"{human_bytes(max(extent(f.app, 'WRITTEN') for f in files))}, each written by one of "
            f"{n(len(writers))} processes ({human_bytes(nbytes)} in all); {secs(cost)} in I/O calls. ")
    if len(known) == len(files):
        text += (f"Their layout, as the file system gave it: {_layouts_text(known)}; more than one stripe per "
                 "file has every process contend on every storage target")
    else:
        text += ("The log cannot show the files' layout: on Lustre, more than one stripe per file has every process "
                 "contend on every storage target (check with lfs getstripe)")
    counters = {"files": len(files), "processes": len(writers), "POSIX_BYTES_WRITTEN": v_sum(files, "POSIX_BYTES_WRITTEN"),
                "STDIO_BYTES_WRITTEN": v_sum(files, "STDIO_BYTES_WRITTEN")}
    if known:
        counters["stripe_counts"] = sorted({c for c, _, _ in known})
    f = Finding("file-per-process", [x.path for x in files], cost, "profile", text, counters,
                cap=None if len(known) == len(files) else "medium")
    ceph = bool(known) and all(c for _, _, c in known)
    f.layout = [_layout_command(ceph, 1, None)]
    f.hints = ["the layout applies to files created after it is set on their directory (lfs migrate -c 1 FILE "
               "changes an existing one)"]
    return [f]


def large_shared(ctx: Context) -> list[Finding]:
    out = []
    chosen = [f for f in ctx.files if ctx.procs(f) >= 2
              and max(extent(f.app, "WRITTEN"), extent(f.app, "READ")) >= th.LARGE_SHARED_BYTES]
    if not chosen:
        return []
    size = max(max(extent(f.app, "WRITTEN"), extent(f.app, "READ")) for f in chosen)
    mpi = any(uses_mpiio(f.app) for f in chosen)
    if mpi:
        calls = v_sum(chosen, *MPIIO_WRITES, "MPIIO_INDEP_READS", "MPIIO_COLL_READS", "MPIIO_NB_READS")
        nbytes = v_sum(chosen, "MPIIO_BYTES_WRITTEN", "MPIIO_BYTES_READ")
    else:
        calls = v_sum(chosen, "POSIX_WRITES", "POSIX_READS")
        nbytes = v_sum(chosen, "POSIX_BYTES_WRITTEN", "POSIX_BYTES_READ")
    mean = nbytes / max(1, calls)
    sizes = common_sizes(chosen, "MPIIO" if mpi else "POSIX")
    # the request size most calls use (when one covers half of them) rather than the mean, which a few
    # large or small requests pull away from it
    request = sizes[0][0] if sizes and sizes[0][1] * 2 >= calls else mean
    stripes, ssize = _stripes(size), _stripe_size(request)
    known = [lay for lay in map(_layout_of, chosen) if lay]
    if known and len(known) == len(chosen) and all((c < 0 or (stripes > 0 and c >= stripes)) and sz == ssize
                                                   for c, sz, _ in known):
        return []   # the layout the log shows is already the one advised
    procs = max(ctx.procs(f) for f in chosen)
    cost = sum(io_time(f.app) for f in chosen)
    wants = (f"a large shared file wants many stripes, each as large as the requests (here "
             f"{stripes if stripes > 0 else 'all'} stripes of {human_bytes(ssize)})")
    text = (f"{n(len(chosen))} file{'s' if len(chosen) != 1 else ''} of up to {human_bytes(size)} shared by up to "
            f"{procs} processes, mean request {human_bytes(mean)}{sizes_text(sizes)}; {secs(cost)} in I/O calls. ")
    if len(known) == len(chosen):
        text += f"Their layout, as the file system gave it: {_layouts_text(known)}; {wants}"
    else:
        text += f"The log cannot show the layout: {wants}"
    counters = {"files": len(chosen), "max_extent": size, "processes": procs, "requests": calls,
                "mean_request": mean, "common_sizes": [list(x) for x in sizes]}
    if known:
        counters["stripe_counts"] = sorted({c for c, _, _ in known})
    f = Finding("large-shared-file", [x.path for x in chosen], cost, "profile", text, counters,
                cap=None if len(known) == len(chosen) else "medium")
    ceph = bool(known) and all(c for _, _, c in known)
    f.layout = [_layout_command(ceph, stripes, ssize)]
    if mpi:
        f.mpi_info = {"striping_factor": str(stripes), "striping_unit": str(ssize),
                      "cb_nodes": str(stripes if stripes > 0 else ctx.hosts), "romio_cb_write": "enable"}
    f.hints = ["the layout applies to files created after it is set on their directory (or set it on the new "
               "file: lfs setstripe -c N -S SIZE FILE before writing; lfs migrate for an existing one)"]
    out.append(f)
    return out


def nothing_to_gain(ctx: Context, findings: list[Finding]) -> list[Finding]:
    covered = {p for f in findings for p in f.files}
    files = [f for f in ctx.files if f.path not in covered and f.bytes() > 0]
    if not files:
        return []
    t = sum(io_time(f.app) for f in files)
    calls = v_sum(files, "POSIX_READS", "POSIX_WRITES", "STDIO_READS", "STDIO_WRITES")
    nbytes = sum(f.bytes() for f in files)
    consec = v_sum(files, "POSIX_CONSEC_READS", "POSIX_CONSEC_WRITES") / max(1, v_sum(files, "POSIX_READS", "POSIX_WRITES"))
    text = (f"{n(len(files))} file{'s' if len(files) != 1 else ''} with {human_bytes(nbytes)} in {n(calls)} reads and "
            f"writes (mean {human_bytes(nbytes / max(1, calls))}, {pct(consec)} consecutive) and {secs(t)} in I/O "
            "calls trip no check: no mode would make them cheaper")
    f = Finding("nothing-to-gain", [x.path for x in files], t, "profile", text,
                {"files": len(files), "bytes": nbytes, "requests": calls, "io_time": t})
    return [f]


CHECKS = [
    small_files,
    many_opens,
    small_mpiio_writes,
    lambda c: small_requests(c, "writes"),
    lambda c: small_requests(c, "reads"),
    small_shared_writes,
    random_reads,
    lambda c: redundant(c, "READ"),
    lambda c: redundant(c, "WRITE"),
    misaligned,
    stdio_heavy,
    metadata_heavy,
    no_collective,
    rank_imbalance,
    file_per_process,
    large_shared,
]

# Finding ids, in the order they are listed when their costs are equal.
IDS = ["file-per-process-small-files", "many-opens-one-file", "small-mpiio-writes", "small-writes", "small-reads",
       "small-shared-writes", "random-reads", "redundant-reads", "redundant-writes", "misaligned", "stdio-heavy",
       "metadata-heavy", "no-collective-mpiio", "rank-imbalance", "file-per-process", "large-shared-file",
       "nothing-to-gain"]

__all__ = ["CHECKS", "IDS", "Finding", "Context", "context", "nothing_to_gain"]
