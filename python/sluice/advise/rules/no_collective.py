"""no-collective-mpiio: a file several ranks open collectively, read and
written mostly by independent MPI-IO calls (Drishti's M02/M03)."""

from __future__ import annotations

from sluice.advise import thresholds as th
from sluice.advise.context import Context
from sluice.advise.counters import n, pct, secs, v, v_sum
from sluice.advise.finding import Finding
from sluice.advise.rules.small_mpiio_writes import mpiio_shared
from sluice.report.model import FileTotals

ID = "no-collective-mpiio"
INDEP = ("MPIIO_INDEP_WRITES", "MPIIO_INDEP_READS")
COLL = ("MPIIO_COLL_WRITES", "MPIIO_COLL_READS")


def _independent(f: FileTotals) -> bool:
    indep, coll = v(f.app, *INDEP), v(f.app, *COLL)
    return (v(f.app, "MPIIO_COLL_OPENS") > 0 and indep > th.COLLECTIVE_ABS
            and indep / (indep + coll) > th.COLLECTIVE_SHARE)


def check(ctx: Context, files: list[FileTotals]) -> list[Finding]:
    chosen = [f for f in mpiio_shared(ctx, files) if _independent(f)]
    if not chosen:
        return []
    iw, ir = v_sum(chosen, "MPIIO_INDEP_WRITES"), v_sum(chosen, "MPIIO_INDEP_READS")
    cw, cr = v_sum(chosen, "MPIIO_COLL_WRITES"), v_sum(chosen, "MPIIO_COLL_READS")
    t = v_sum(chosen, "MPIIO_F_WRITE_TIME", "MPIIO_F_READ_TIME")
    cost = sum(v(f.app, "MPIIO_F_WRITE_TIME", "MPIIO_F_READ_TIME") * v(f.app, *INDEP) / max(1.0, v(f.app, *INDEP, *COLL))
               for f in chosen)
    mode = "acb" if iw >= ir else "profile"
    text = (f"{n(iw + ir)} independent MPI-IO calls ({n(iw)} writes, {n(ir)} reads) against {n(cw + cr)} collective "
            f"ones on {n(len(chosen))} file{'s' if len(chosen) != 1 else ''} opened by several ranks; "
            f"{secs(t)} in MPI-IO reads and writes (Drishti flags more than {pct(th.COLLECTIVE_SHARE)} independent "
            f"and {th.COLLECTIVE_ABS:,})")
    f = Finding(ID, [x.path for x in chosen], cost, mode, text,
                {"MPIIO_INDEP_WRITES": iw, "MPIIO_INDEP_READS": ir, "MPIIO_COLL_WRITES": cw, "MPIIO_COLL_READS": cr,
                 "MPIIO_F_WRITE_TIME": v_sum(chosen, "MPIIO_F_WRITE_TIME"),
                 "MPIIO_F_READ_TIME": v_sum(chosen, "MPIIO_F_READ_TIME")})
    f.mpi_info = {"romio_cb_write": "enable", "romio_cb_read": "enable", "cb_nodes": str(ctx.hosts)}
    f.hints = ["collective calls (MPI_File_write_at_all, MPI_File_read_at_all) let MPI-IO merge the ranks' "
               "requests through aggregators"]
    if mode == "acb":
        f.hints.insert(0, "--mode acb aggregates the independent writes of shared files without a code change")
    return [f]
