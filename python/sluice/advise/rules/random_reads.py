"""random-reads: reads that start before the end of the previous one
(Drishti's P11): read-ahead does not serve them."""

from __future__ import annotations

from sluice.advise import thresholds as th
from sluice.advise.context import Context
from sluice.advise.counters import n, pct, secs, v, v_sum
from sluice.advise.finding import Finding
from sluice.report.model import FileTotals
from sluice.report.text import human_bytes

ID = "random-reads"


def _random(ctx: Context, f: FileTotals) -> float:
    """Reads not sequential, less each process's first."""
    return max(0.0, v(f.app, "POSIX_READS") - v(f.app, "POSIX_SEQ_READS") - ctx.procs(f, "READ"))


def check(ctx: Context, files: list[FileTotals]) -> list[Finding]:
    job_reads = sum(v(f.app, "POSIX_READS") for f in ctx.files)
    chosen = [(f, rnd) for f in files if (r := v(f.app, "POSIX_READS")) > 0
              and (rnd := _random(ctx, f)) / r > th.RANDOM_SHARE]
    rnd_total = sum(rnd for _, rnd in chosen)
    if rnd_total <= th.RANDOM_ABS or not job_reads or rnd_total / job_reads <= th.RANDOM_SHARE:
        return []
    chosen_files = [f for f, _ in chosen]
    r, t = v_sum(chosen_files, "POSIX_READS"), v_sum(chosen_files, "POSIX_F_READ_TIME")
    nbytes = v_sum(chosen_files, "POSIX_BYTES_READ")
    cost = sum(v(f.app, "POSIX_F_READ_TIME") * rnd / max(1.0, v(f.app, "POSIX_READS")) for f, rnd in chosen)
    text = (f"{n(rnd_total)} of {n(r)} POSIX reads ({pct(rnd_total / r)}) start before the end of the previous "
            f"read, {pct(v_sum(chosen_files, 'POSIX_CONSEC_READS') / r)} continue it (mean {human_bytes(nbytes / r)}); "
            f"{secs(t)} in reads (Drishti flags more than {pct(th.RANDOM_SHARE)} and {th.RANDOM_ABS:,})")
    f = Finding(ID, [x.path for x in chosen_files], cost, "profile", text,
                {"POSIX_READS": r, "POSIX_SEQ_READS": v_sum(chosen_files, "POSIX_SEQ_READS"),
                 "POSIX_CONSEC_READS": v_sum(chosen_files, "POSIX_CONSEC_READS"), "random_reads": rnd_total,
                 "POSIX_BYTES_READ": nbytes, "POSIX_F_READ_TIME": t})
    f.hints = ["no sluice mode helps: buffer mode's read-ahead follows sequential reads only, so random reads "
               "pay for none of it",
               "in the code: sort the requests by offset and read larger contiguous blocks; read a file that fits "
               "in memory once, whole",
               "MPI-IO: collective reads (MPI_File_read_at_all) with romio_cb_read=enable; HDF5: a chunk cache "
               "that holds the chunks read again (H5Pset_chunk_cache)"]
    return [f]
