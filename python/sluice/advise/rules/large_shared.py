"""large-shared-file: a file of 1 GiB or more used by several processes
(layout advice: many stripes, each as large as the requests)."""

from __future__ import annotations

from sluice.advise import thresholds as th
from sluice.advise.context import Context
from sluice.advise.counters import MPIIO_WRITES, common_sizes, extent, io_time, n, secs, sizes_text, uses_mpiio, v_sum
from sluice.advise.finding import Finding
from sluice.advise.rules.layout import layout_command, layout_of, layouts_text, stripe_size, stripes
from sluice.report.model import FileTotals
from sluice.report.text import human_bytes

ID = "large-shared-file"


def _size(f: FileTotals) -> int:
    return max(extent(f.app, "WRITTEN"), extent(f.app, "READ"))


def check(ctx: Context, files: list[FileTotals]) -> list[Finding]:
    chosen = [f for f in files if ctx.procs(f) >= 2 and _size(f) >= th.LARGE_SHARED_BYTES]
    if not chosen:
        return []
    size = max(_size(f) for f in chosen)
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
    count, ssize = stripes(size), stripe_size(request)
    known = [lay for lay in map(layout_of, chosen) if lay]
    if known and len(known) == len(chosen) and all((c < 0 or (count > 0 and c >= count)) and sz == ssize
                                                   for c, sz, _ in known):
        return []   # the layout the log shows is already the one advised
    procs = max(ctx.procs(f) for f in chosen)
    cost = sum(io_time(f.app) for f in chosen)
    wants = (f"a large shared file wants many stripes, each as large as the requests (here "
             f"{count if count > 0 else 'all'} stripes of {human_bytes(ssize)})")
    text = (f"{n(len(chosen))} file{'s' if len(chosen) != 1 else ''} of up to {human_bytes(size)} shared by up to "
            f"{procs} processes, mean request {human_bytes(mean)}{sizes_text(sizes)}; {secs(cost)} in I/O calls. ")
    if len(known) == len(chosen):
        text += f"Their layout, as the file system gave it: {layouts_text(known)}; {wants}"
    else:
        text += f"The log cannot show the layout: {wants}"
    counters = {"files": len(chosen), "max_extent": size, "processes": procs, "requests": calls,
                "mean_request": mean, "common_sizes": [list(x) for x in sizes]}
    if known:
        counters["stripe_counts"] = sorted({c for c, _, _ in known})
    f = Finding(ID, [x.path for x in chosen], cost, "profile", text, counters,
                cap=None if len(known) == len(chosen) else "medium")
    f.layout = [layout_command(bool(known) and all(c for _, _, c in known), count, ssize)]
    if mpi:
        f.mpi_info = {"striping_factor": str(count), "striping_unit": str(ssize),
                      "cb_nodes": str(count if count > 0 else ctx.hosts), "romio_cb_write": "enable"}
    f.hints = ["the layout applies to files created after it is set on their directory (or set it on the new "
               "file: lfs setstripe -c N -S SIZE FILE before writing; lfs migrate for an existing one)"]
    return [f]
