"""file-per-process: large files in one directory, each written by one
process (layout advice: one stripe each)."""

from __future__ import annotations

from collections import defaultdict
from posixpath import dirname

from sluice.advise import thresholds as th
from sluice.advise.context import Context
from sluice.advise.counters import extent, io_time, n, secs, uses_mpiio, v_sum
from sluice.advise.finding import Finding
from sluice.advise.rules.layout import file_per_process_layout, layout_command, layout_of, layouts_text
from sluice.report.model import FileTotals
from sluice.report.text import human_bytes

ID = "file-per-process"


def check(ctx: Context, files: list[FileTotals]) -> list[Finding]:
    by_dir: dict[str, list[FileTotals]] = defaultdict(list)
    for f in files:
        if uses_mpiio(f.app) and ctx.procs(f) > 1:
            continue
        if extent(f.app, "WRITTEN") >= th.SMALL_FILE_BYTES and len(ctx.writers(f)) == 1:
            by_dir[dirname(f.path)].append(f)
    chosen = [f for fs in by_dir.values() if file_per_process_layout(ctx, fs) for f in fs]
    # files the log shows on one stripe already have the layout this finding is about
    chosen = [f for f in chosen if (layout_of(f) or (0,))[0] != 1]
    if len(chosen) < 2:
        return []
    known = [lay for lay in map(layout_of, chosen) if lay]
    writers = set().union(*(ctx.writers(f) for f in chosen))
    nbytes = v_sum(chosen, "POSIX_BYTES_WRITTEN", "STDIO_BYTES_WRITTEN")
    cost = sum(io_time(f.app) for f in chosen)
    text = (f"{n(len(chosen))} files of {human_bytes(min(extent(f.app, 'WRITTEN') for f in chosen))} to "
            f"{human_bytes(max(extent(f.app, 'WRITTEN') for f in chosen))}, each written by one of "
            f"{n(len(writers))} processes ({human_bytes(nbytes)} in all); {secs(cost)} in I/O calls. ")
    if len(known) == len(chosen):
        text += (f"Their layout, as the file system gave it: {layouts_text(known)}; more than one stripe per "
                 "file has every process contend on every storage target")
    else:
        text += ("The log cannot show the files' layout: on Lustre, more than one stripe per file has every process "
                 "contend on every storage target (check with lfs getstripe)")
    counters = {"files": len(chosen), "processes": len(writers),
                "POSIX_BYTES_WRITTEN": v_sum(chosen, "POSIX_BYTES_WRITTEN"),
                "STDIO_BYTES_WRITTEN": v_sum(chosen, "STDIO_BYTES_WRITTEN")}
    if known:
        counters["stripe_counts"] = sorted({c for c, _, _ in known})
    f = Finding(ID, [x.path for x in chosen], cost, "profile", text, counters,
                cap=None if len(known) == len(chosen) else "medium")
    f.layout = [layout_command(bool(known) and all(c for _, _, c in known), 1, None)]
    f.hints = ["the layout applies to files created after it is set on their directory (lfs migrate -c 1 FILE "
               "changes an existing one)"]
    return [f]
