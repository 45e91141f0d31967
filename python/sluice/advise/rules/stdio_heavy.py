"""stdio-heavy: more than 10 % of the job's bytes go through stdio streams
(Drishti's S01)."""

from __future__ import annotations

from sluice.advise import thresholds as th
from sluice.advise.context import Context
from sluice.advise.counters import n, pct, secs, stdio_time, v, v_sum
from sluice.advise.finding import Finding
from sluice.report.model import FileTotals
from sluice.report.text import human_bytes

ID = "stdio-heavy"


def check(ctx: Context, files: list[FileTotals]) -> list[Finding]:
    # the share is the job's, as Drishti's; the finding names the files with stdio bytes
    sb = sum(v(f.app, "STDIO_BYTES_READ", "STDIO_BYTES_WRITTEN") for f in ctx.job.files)
    pb = sum(v(f.app, "POSIX_BYTES_READ", "POSIX_BYTES_WRITTEN") for f in ctx.job.files)
    if sb == 0 or sb / (sb + pb) <= th.STDIO_SHARE:
        return []
    chosen = [f for f in files if v(f.app, "STDIO_BYTES_READ", "STDIO_BYTES_WRITTEN") > 0]
    if not chosen:
        return []
    calls = v_sum(chosen, "STDIO_READS", "STDIO_WRITES")
    t = sum(stdio_time(f.app) for f in chosen)
    text = (f"{human_bytes(sb)} of {human_bytes(sb + pb)} ({pct(sb / (sb + pb))}) moved through stdio streams in "
            f"{n(calls)} calls (mean {human_bytes(sb / max(1, calls))}) on {n(len(chosen))} "
            f"file{'s' if len(chosen) != 1 else ''}; {secs(t)} in stdio calls (Drishti flags more than "
            f"{pct(th.STDIO_SHARE)})")
    f = Finding(ID, [x.path for x in chosen], t, "buffer", text,
                {"STDIO_BYTES_READ": v_sum(chosen, "STDIO_BYTES_READ"),
                 "STDIO_BYTES_WRITTEN": v_sum(chosen, "STDIO_BYTES_WRITTEN"), "STDIO_READS": v_sum(chosen, "STDIO_READS"),
                 "STDIO_WRITES": v_sum(chosen, "STDIO_WRITES"),
                 "STDIO_F_WRITE_TIME": v_sum(chosen, "STDIO_F_WRITE_TIME"),
                 "STDIO_F_READ_TIME": v_sum(chosen, "STDIO_F_READ_TIME"), "POSIX_BYTES": pb, "STDIO_BYTES": sb})
    f.hints = ["buffer mode gives each stream on a buffered path a buffer of one unit (4 MiB), so the C library "
               "reaches the kernel in unit-sized pieces",
               "in the code: bulk data through write()/MPI-IO/HDF5, or setvbuf() with a large buffer"]
    return [f]
