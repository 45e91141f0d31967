"""redundant-reads / redundant-writes: more bytes moved than the extent
touched (Drishti's P09 / P10, per file)."""

from __future__ import annotations

from sluice.advise import thresholds as th
from sluice.advise.context import Context
from sluice.advise.counters import HDF5_SUFFIXES, extent, n, pct, v, v_sum
from sluice.advise.finding import Finding
from sluice.advise.gain import gain
from sluice.report.model import FileTotals
from sluice.report.text import human_bytes


def _excess(f: FileTotals, word: str) -> float:
    """Bytes moved beyond the extent, where that is more than the margins allow (else 0)."""
    ext = extent(f.app, word)
    excess = v(f.app, f"POSIX_BYTES_{word}", f"STDIO_BYTES_{word}") - ext
    return excess if ext and excess > th.REDUNDANT_SHARE * ext and excess >= th.REDUNDANT_MIN_BYTES else 0.0


def _hints(ctx: Context, files: list[FileTotals], K: str) -> list[str]:
    if K == "READ":
        several = any(ctx.procs(f, "READ") > 1 for f in files)
        return (["each of several processes reads the same bytes: read them once (one rank per node) and "
                 "share them (MPI_Bcast, or a node-local copy)"] if several else []) + \
            ["a process reads the same bytes again: keep them in memory"]
    hints = []
    if any(x.path.endswith(".nc") for x in files):
        hints.append("netCDF fills every variable before the data is written: nc_set_fill(ncid, NC_NOFILL, "
                     "&old) (nf90_set_fill in Fortran) writes the data only")
    if any(x.path.endswith(HDF5_SUFFIXES) for x in files):
        hints.append("HDF5: H5Pset_fill_time(dcpl, H5D_FILL_TIME_NEVER) skips writing fill values")
    return hints + ["in the code: write each byte once per output step (no pre-fill, no rewrite of headers "
                    "after every record)"]


def check(ctx: Context, files: list[FileTotals], K: str) -> list[Finding]:
    word = "READ" if K == "READ" else "WRITTEN"
    chosen = [(f, ex) for f in files if (ex := _excess(f, word)) > 0]
    if not chosen:
        return []
    excess_total = sum(ex for _, ex in chosen)
    chosen_files = [f for f, _ in chosen]
    tname = "POSIX_F_READ_TIME" if K == "READ" else "POSIX_F_WRITE_TIME"
    sname = "STDIO_F_READ_TIME" if K == "READ" else "STDIO_F_WRITE_TIME"
    nbytes = v_sum(chosen_files, f"POSIX_BYTES_{word}", f"STDIO_BYTES_{word}")
    ext = sum(extent(f.app, word) for f in chosen_files)
    cost = sum(v(f.app, tname, sname) * ex / max(1.0, v(f.app, f"POSIX_BYTES_{word}", f"STDIO_BYTES_{word}"))
               for f, ex in chosen)
    multi = [f for f in chosen_files if ctx.procs(f, word) > 1]
    verb = "read" if K == "READ" else "written"
    text = (f"{human_bytes(nbytes)} {verb} from {n(len(chosen_files))} file{'s' if len(chosen_files) != 1 else ''} "
            f"whose {verb} extent is {human_bytes(ext)}: {human_bytes(excess_total)} "
            f"({pct(excess_total / max(1, nbytes))}) {verb} more than once"
            + (f"; {n(len(multi))} of the files by several processes" if multi else ""))
    f = Finding("redundant-reads" if K == "READ" else "redundant-writes", [x.path for x in chosen_files], cost,
                "profile", text,
                {f"POSIX_BYTES_{word}": v_sum(chosen_files, f"POSIX_BYTES_{word}"),
                 f"STDIO_BYTES_{word}": v_sum(chosen_files, f"STDIO_BYTES_{word}"), f"extent_{verb}": ext,
                 "bytes_again": excess_total, tname: v_sum(chosen_files, tname)})
    f.gain = gain(ctx, chosen_files, cost, f"{'read' if K == 'READ' else 'write'} time x the share of bytes moved "
                                           "more than once, if each byte moved once", per="byte")
    f.hints = _hints(ctx, chosen_files, K)
    return [f]


def redundant_reads(ctx: Context, files: list[FileTotals]) -> list[Finding]:
    return check(ctx, files, "READ")


def redundant_writes(ctx: Context, files: list[FileTotals]) -> list[Finding]:
    return check(ctx, files, "WRITE")
