"""small-mpiio-writes: small MPI-IO writes to files several ranks open
(Drishti's P06 thresholds applied to MPI-IO): acb's case."""

from __future__ import annotations

from sluice.advise import thresholds as th
from sluice.advise.context import Context
from sluice.advise.counters import (MPIIO_WRITES, coalesced, common_sizes, extent, n, pct, secs, sizes_text, small,
                                    uses_mpiio, v, v_sum)
from sluice.advise.finding import Finding
from sluice.advise.gain import coalescing_gain
from sluice.advise.rules.layout import stripes
from sluice.report.model import FileTotals
from sluice.report.text import human_bytes

ID = "small-mpiio-writes"


def mpiio_shared(ctx: Context, files: list[FileTotals]) -> list[FileTotals]:
    return [f for f in files if uses_mpiio(f.app) and ctx.procs(f) >= 2]


def _aggregated(f: FileTotals) -> bool:
    return coalesced(f, "MPIIO_INDEP_WRITES") or v(f.fs, "MPIIO_ACB_FLUSHES") > 0


def check(ctx: Context, files: list[FileTotals]) -> list[Finding]:
    chosen = []
    for f in mpiio_shared(ctx, files):
        w, s = v(f.app, *MPIIO_WRITES), small(f.app, "MPIIO", "WRITE")
        if w and s / w > th.SMALL_SHARE:
            chosen.append(f)
    if sum(small(f.app, "MPIIO", "WRITE") for f in chosen) <= th.SMALL_ABS:
        return []
    done = [f for f in chosen if _aggregated(f)]
    todo = [f for f in chosen if not _aggregated(f)] or done
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
    f = Finding(ID, [x.path for x in todo], cost, "acb", text,
                {"MPIIO_WRITES": w, "MPIIO_SIZE_WRITE_0_100..100K_1M": s, "MPIIO_INDEP_WRITES": indep,
                 "MPIIO_COLL_WRITES": v_sum(todo, "MPIIO_COLL_WRITES"), "MPIIO_BYTES_WRITTEN": nbytes,
                 "MPIIO_F_WRITE_TIME": t, "ranks": procs}, in_effect=in_effect)
    size = max(extent(x.app, "WRITTEN") for x in todo)
    count = stripes(size)
    f.mpi_info = {"romio_cb_write": "enable",
                  "cb_nodes": str(max(1, ctx.hosts if count < 0 else min(ctx.hosts, count))),
                  "striping_factor": str(count if count > 0 else -1), "striping_unit": "1048576"}
    f.toml = {"acb": {"stripe_size": "1M"}}
    f.hints = ["--mode acb packs each rank's writes and has a few aggregator ranks write large stripe-aligned "
               "pieces at MPI_File_sync/close (docs/acb.md)",
               "without sluice: collective writes (MPI_File_write_at_all) with the MPI_Info hints listed"]
    if size >= th.LARGE_SHARED_BYTES:
        f.layout = [f"lfs setstripe -c {count} -S 1M {{dir}}"]
    if not in_effect:
        f.gain = coalescing_gain(ctx, todo, [(v(x.app, *MPIIO_WRITES), small(x.app, "MPIIO", "WRITE"),
                                              v(x.app, "MPIIO_BYTES_WRITTEN"), v(x.app, "MPIIO_F_WRITE_TIME"), 0,
                                              th.ACB_WRITE_SIZE, 0) for x in todo],
                                 "MPI-IO write calls", "16 MiB aggregator writes",
                                 " (ACB's exchange between ranks not subtracted)")
    return [f]
