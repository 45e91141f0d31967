"""misaligned: requests that start off the file system's alignment
(Drishti's P08), counted by the log or inferred where that is exact."""

from __future__ import annotations

import math

from sluice.advise import thresholds as th
from sluice.advise.context import Context
from sluice.advise.counters import (ALL_BUCKETS, HDF5_SUFFIXES, coalesced, consecutive_share, extent, n, pct, secs,
                                    uses_mpiio, v, v_sum)
from sluice.advise.finding import Finding
from sluice.report.model import FileTotals
from sluice.report.text import human_bytes

ID = "misaligned"
BUFFER_HINT = "buffer mode writes whole units aligned to the unit (4 MiB, rounded to the Lustre stripe)"


def _measured(f: FileTotals) -> tuple[int, int, int] | None:
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


def _inferred(ctx: Context, f: FileTotals) -> tuple[int, int] | None:
    """(write size, writes off a 1 MiB boundary) of a file written from offset 0 to its end in writes of
    one size S: write i starts at i*S, on a boundary only when i is a multiple of 1 MiB / gcd(S, 1 MiB)."""
    a = f.app
    w, b = int(v(a, "POSIX_WRITES")), int(v(a, "POSIX_BYTES_WRITTEN"))
    if w < 2 or b % w or b // w < th.MISALIGNED_MIN_SIZE:
        return None
    if not any(v(a, f"POSIX_SIZE_WRITE_{bk}") == w for bk in ALL_BUCKETS):
        return None         # sizes differ: alignment cannot be inferred
    if extent(a, "WRITTEN") != b or consecutive_share(f, "WRITE", ctx.procs(f, "WRITTEN")) < 0.9:
        return None         # not one contiguous run from offset 0
    size = b // w
    return size, w - math.ceil(w / (th.ALIGNMENT // math.gcd(size, th.ALIGNMENT)))


def _alignment_hints(f: Finding, files: list[FileTotals]) -> None:
    if any(x.path.endswith(HDF5_SUFFIXES + (".nc",)) for x in files):
        f.hints.append("HDF5: H5Pset_alignment(fapl, 1048576, 1048576) puts every object of 1 MiB or more on a "
                       "1 MiB boundary; netCDF-4 (4.9 or later): nc_set_alignment(1048576, 1048576)")
    if any(uses_mpiio(x.app) for x in files):
        f.mpi_info = {"striping_unit": str(th.ALIGNMENT)}
        f.hints.append("MPI-IO: collective writes (romio_cb_write=enable) give the aggregators file domains "
                       "aligned to the stripe (striping_unit)")
    f.hints.append("in the code: write in multiples of the stripe size (1 MiB by default on Lustre)")


def _from_counts(measured: list[tuple[FileTotals, int, int, int]]) -> Finding:
    """Where the log counted requests off the file system's alignment."""
    files = [f for f, *_ in measured]
    ops, bad = sum(o for _, o, _, _ in measured), sum(b for *_, b, _ in measured)
    aligns = sorted({al for *_, al in measured})
    t = v_sum(files, "POSIX_F_WRITE_TIME", "POSIX_F_READ_TIME")
    cost = sum(v(f.app, "POSIX_F_WRITE_TIME", "POSIX_F_READ_TIME") * b / o for f, o, b, _ in measured)
    mean = v_sum(files, "POSIX_BYTES_WRITTEN", "POSIX_BYTES_READ") / max(1, ops)
    text = (f"{n(bad)} of {n(ops)} POSIX reads and writes ({pct(bad / ops)}) start off the file system's "
            f"{' / '.join(human_bytes(x) for x in aligns)} alignment (POSIX_FILE_NOT_ALIGNED), mean request "
            f"{human_bytes(mean)}; {n(len(files))} file{'s' if len(files) != 1 else ''}, {secs(t)} in reads and "
            f"writes (Drishti flags more than {pct(th.MISALIGNED_SHARE)})")
    # buffer mode writes whole aligned units, but only of files written by one process at a time without MPI-IO
    mode = "buffer" if mean < th.BUFFER_UNIT and not any(uses_mpiio(x.app) for x in files) else "profile"
    in_effect = mode == "buffer" and all(coalesced(x, "POSIX_WRITES") for x in files)
    if in_effect:
        text += "; already in effect: a mode coalesced them into aligned units"
    f = Finding(ID, [x.path for x in files], cost, mode, text,
                {"POSIX_READS+WRITES": ops, "POSIX_FILE_NOT_ALIGNED": bad, "POSIX_FILE_ALIGNMENT": aligns[0],
                 "mean_request_bytes": mean, "POSIX_F_READ+WRITE_TIME": t}, in_effect=in_effect)
    if mode == "buffer":
        f.hints.append(BUFFER_HINT)
    _alignment_hints(f, files)
    return f


def _from_inference(chosen: list[tuple[FileTotals, int, int]]) -> Finding:
    files = [f for f, *_ in chosen]
    w, bad = v_sum(files, "POSIX_WRITES"), sum(x for *_, x in chosen)
    sizes = sorted({s for _, s, _ in chosen})
    t = v_sum(files, "POSIX_F_WRITE_TIME")
    cost = sum(v(f.app, "POSIX_F_WRITE_TIME") * x / max(1.0, v(f.app, "POSIX_WRITES")) for f, _, x in chosen)
    in_effect = all(coalesced(f, "POSIX_WRITES") for f in files)
    text = (f"{n(bad)} of {n(w)} POSIX writes ({pct(bad / w)}) start off a {human_bytes(th.ALIGNMENT)} boundary: "
            f"the files are written front to back in writes of {', '.join(f'{s:,}' for s in sizes[:4])} bytes "
            f"(inferred from the counters: one size bucket, bytes = extent, consecutive); {secs(t)} in writes "
            f"(Drishti flags more than {pct(th.MISALIGNED_SHARE)})")
    mode = "buffer" if max(sizes) < th.BUFFER_UNIT else "profile"
    if in_effect:
        text += "; already in effect: a mode coalesced them into aligned units"
    f = Finding(ID, [x.path for x in files], cost, mode, text,
                {"POSIX_WRITES": w, "misaligned_writes": bad, "request_bytes": sizes[0] if len(sizes) == 1 else sizes,
                 "POSIX_BYTES_WRITTEN": v_sum(files, "POSIX_BYTES_WRITTEN"), "POSIX_F_WRITE_TIME": t,
                 "alignment": th.ALIGNMENT}, in_effect=in_effect)
    if mode == "buffer":
        f.hints.append(BUFFER_HINT)
    _alignment_hints(f, files)
    return f


def check(ctx: Context, files: list[FileTotals]) -> list[Finding]:
    measured: list[tuple[FileTotals, int, int, int]] = []
    inferred: list[tuple[FileTotals, int, int]] = []
    for f in files:
        m = _measured(f)
        if m is not None:
            ops, bad, align = m
            if bad / ops > th.MISALIGNED_SHARE:
                measured.append((f, ops, bad, align))
        elif (guess := _inferred(ctx, f)) is not None and guess[1] / v(f.app, "POSIX_WRITES") > th.MISALIGNED_SHARE:
            inferred.append((f, *guess))
    if measured:
        return [_from_counts(measured)]
    return [_from_inference(inferred)] if inferred else []
