"""metadata-heavy: metadata calls take 30 % of the job's I/O time over 1,000
calls, or a process spends more than 30 s in them (Drishti's P17)."""

from __future__ import annotations

from collections import defaultdict

from sluice.advise import thresholds as th
from sluice.advise.context import Context
from sluice.advise.counters import META_CALLS, SERVER_META_CALLS, meta_time, n, pct, secs, v, v_sum
from sluice.advise.finding import Finding
from sluice.advise.gain import gain
from sluice.report.model import FileTotals

ID = "metadata-heavy"


def _per_process(ctx: Context, files: list[FileTotals]) -> dict[int, float]:
    """Metadata seconds of each process on these files."""
    per_pid: dict[int, float] = defaultdict(float)
    for f in files:
        for pid, d in ctx.per_proc.get(f.path, {}).items():
            who = ctx.members(pid)
            for p in who:
                per_pid[p] += meta_time(d) / len(who)
    return per_pid


def check(ctx: Context, files: list[FileTotals]) -> list[Finding]:
    files = [f for f in files if meta_time(f.app) > 0]
    slow = {pid: t for pid, t in _per_process(ctx, files).items() if t > th.METADATA_RANK_SECONDS}
    mt = sum(meta_time(f.app) for f in files)
    # seeks move a file position in the client: they count in the time but not as calls to a server
    calls = v_sum(files, *SERVER_META_CALLS, "MPIIO_INDEP_OPENS", "MPIIO_COLL_OPENS")
    by_share = ctx.T > 0 and mt / ctx.T >= th.METADATA_SHARE and calls >= th.METADATA_CALLS
    if not slow and not by_share:
        return []
    keep, acc = [], 0.0
    for f in sorted(files, key=lambda f: -meta_time(f.app)):       # the files holding 95 % of the metadata time
        keep.append(f)
        acc += meta_time(f.app)
        if acc >= 0.95 * mt:
            break
    written = [f for f in keep if v(f.app, "POSIX_BYTES_WRITTEN", "STDIO_BYTES_WRITTEN") > 0]
    written_time = sum(meta_time(f.app) for f in written)
    mode = "stage" if written_time >= 0.5 * acc else "profile"
    kinds = {k: v_sum(keep, k) for k in META_CALLS if v_sum(keep, k)}
    top = ", ".join(f"{n(x)} {k.split('_', 1)[1].lower()}" for k, x in sorted(kinds.items(), key=lambda kv: -kv[1])[:5])
    text = (f"{secs(mt)} in metadata calls ({pct(mt / ctx.T) if ctx.T else '-'} of the I/O time; sluice flags "
            f"{pct(th.METADATA_SHARE)} with {th.METADATA_CALLS:,} calls besides seeks): {top}")
    if slow:
        text += (f"; {len(slow)} process{'es' if len(slow) != 1 else ''} spent more than "
                 f"{th.METADATA_RANK_SECONDS:.0f} s in them (Drishti's threshold), up to {secs(max(slow.values()))}")
    f = Finding(ID, [x.path for x in keep], acc, mode, text,
                {**kinds, "POSIX_F_META_TIME": v_sum(keep, "POSIX_F_META_TIME"),
                 "STDIO_F_META_TIME": v_sum(keep, "STDIO_F_META_TIME"),
                 "MPIIO_F_META_TIME": v_sum(keep, "MPIIO_F_META_TIME"),
                 "processes_over_30s": len(slow)})
    if mode == "stage":
        f.hints.append("stage mode answers stat, access, reopen and unlink of the files it staged from the "
                       "node-local tier")
        f.gain = gain(ctx, written, written_time, "metadata time on files the program writes, which stage mode "
                                                  "keeps off the shared file system (an upper bound)")
    f.hints.append("in the code: fewer opens, stats and seeks per file (keep files open, cache stat results); "
                   "HDF5: collective metadata (H5Pset_all_coll_metadata_ops, H5Pset_coll_metadata_write)")
    return [f]
