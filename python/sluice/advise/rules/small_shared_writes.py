"""small-shared-writes: small POSIX writes to a file several processes write
in interleaved pieces (Drishti's P16): no mode coalesces them."""

from __future__ import annotations

from sluice.advise import thresholds as th
from sluice.advise.context import Context
from sluice.advise.counters import (common_sizes, consecutive_share, n, pct, secs, sizes_text, small, sum_fs,
                                    uses_mpiio, v, v_sum)
from sluice.advise.finding import Finding
from sluice.report.model import FileTotals

ID = "small-shared-writes"


def _interleaved(ctx: Context, f: FileTotals) -> bool:
    a = f.app
    procs = ctx.procs(f, "WRITTEN")
    w, s = v(a, "POSIX_WRITES"), small(a, "POSIX", "WRITE")
    return (not uses_mpiio(a) and procs >= 2 and w > 0 and s / w > th.SMALL_SHARE
            and consecutive_share(f, "WRITE", procs) < th.SCATTERED_MAX_CONSECUTIVE)


def check(ctx: Context, files: list[FileTotals]) -> list[Finding]:
    chosen = [f for f in files if _interleaved(ctx, f)]
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
    f = Finding(ID, [x.path for x in chosen], cost, "profile", text,
                {"POSIX_WRITES": w, "POSIX_SIZE_WRITE_0_100..100K_1M": s,
                 "POSIX_CONSEC_WRITES": v_sum(chosen, "POSIX_CONSEC_WRITES"), "POSIX_F_WRITE_TIME": t,
                 "processes": procs, "POSIX_FALLBACK_SCATTERED": scattered})
    f.hints = ["buffer mode cannot coalesce interleaved pieces without writing bytes the program did not "
               "write, so no mode helps as the program is",
               "in the code: let each process write one contiguous block, or write the pieces through MPI-IO "
               "collective calls (MPI_File_write_at_all) and run with --mode acb, which aggregates them into "
               "large stripe-aligned writes"]
    return [f]
