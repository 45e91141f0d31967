"""Darshan's HEATMAP module (3.4, version 1): bytes read and written per
rank and time bin, one record per rank and module ("heatmap:POSIX",
"heatmap:MPIIO", "heatmap:STDIO", the modules Darshan's runtime feeds it).

A record is the base record (the id of its name, the rank), the bin width
in seconds (f64), the number of bins (i64), the two array pointers of the
C struct (written as zeros, ignored by readers), then the write bins and
the read bins (i64 bytes each). Darshan starts with bins of 0.1 s and
doubles their width until 200 bins cover the run, then keeps the bins up to
the run's end; every record of a log has the same bins, and a rank that
moved no bytes through a module has no record of it.

sluice's logs hold each file's first and last read and write per process,
not each call's time, so a record's bytes are spread evenly from its first
to its last access (as the report's heatmap does, report/heatmap.py); with
the program's own calls the bins' totals are exact.
"""

from __future__ import annotations

import math
import struct

import numpy as np

from sluice.darshan.layout import HEATMAP
from sluice.darshan.recid import record_id

MAX_BINS = 200
FIRST_WIDTH = 0.1
# base record, bin width, nbins, write_bins and read_bins pointers (64-bit)
RECORD_HEAD = struct.Struct("<QqdqQQ")
# the sluice modules that feed it, and the name of each one's record
NAMES = {"POSIX": "heatmap:POSIX", "MPIIO": "heatmap:MPIIO", "STDIO": "heatmap:STDIO"}
KINDS = (("write", "BYTES_WRITTEN", "F_WRITE"), ("read", "BYTES_READ", "F_READ"))
CHUNK = 4096     # records spread at once (a [records, bins] matrix)


def bins_for(runtime: float) -> tuple[float, int]:
    """Darshan's bin width and number of bins for a run of `runtime` seconds."""
    width = FIRST_WIDTH
    while runtime > width * MAX_BINS:
        width *= 2.0
    return width, max(1, math.ceil(runtime / width))


def spread(rows: np.ndarray, nrows: int, start: np.ndarray, end: np.ndarray, nbytes: np.ndarray,
           width: float, nbins: int) -> np.ndarray:
    """Bytes per [row, bin] of intervals [start, end] (seconds since the
    job started) carrying nbytes each, spread evenly over them; an interval
    of no length falls into the bin of its start."""
    out = np.zeros((nrows, nbins))
    keep = nbytes > 0
    rows, start, end, nbytes = rows[keep], start[keep], end[keep], nbytes[keep].astype(np.float64)
    hi = width * nbins
    start = np.clip(start, 0.0, hi)
    end = np.clip(np.maximum(end, start), 0.0, hi)
    point = end - start <= width * 1e-9
    np.add.at(out, (rows[point], np.clip((start[point] / width).astype(np.int64), 0, nbins - 1)), nbytes[point])
    edges = np.arange(nbins + 1) * width
    r, s, e, b = rows[~point], start[~point], end[~point], nbytes[~point]
    for i in range(0, len(b), CHUNK):
        part = slice(i, i + CHUNK)
        below = np.clip((edges[None, :] - s[part, None]) / (e[part] - s[part])[:, None], 0.0, 1.0) * b[part, None]
        np.add.at(out, r[part], np.diff(below, axis=1))
    return out


def whole_bytes(m: np.ndarray) -> np.ndarray:
    """Bins as whole bytes whose running sums are those of the exact values
    rounded: each row adds up to its total rounded, as Darshan's bins are
    whole bytes."""
    run = np.rint(np.cumsum(m, axis=1)).astype(np.int64)
    return np.diff(run, axis=1, prepend=0)


def records(ranks: list[int], per_module: dict[str, dict[str, tuple]], runtime: float) -> tuple[list[bytes], dict[int, str]]:
    """The HEATMAP records of a job and the names they use. per_module:
    for each sluice module, per kind ("read", "write") the arrays (row,
    bytes, first access, last access), row an index into `ranks`."""
    width, nbins = bins_for(runtime)
    out: list[bytes] = []
    names: dict[int, str] = {}
    for module, name in NAMES.items():
        kinds = per_module.get(module)
        if not kinds:
            continue
        bins = {}
        for kind in ("write", "read"):
            rows, nbytes, first, last = kinds[kind]
            bins[kind] = whole_bytes(spread(rows, len(ranks), first, last, nbytes, width, nbins))
        rid = record_id(name)
        for i, rank in enumerate(ranks):
            w, r = bins["write"][i], bins["read"][i]
            if not w.any() and not r.any():
                continue      # Darshan drops a heatmap with no data
            out.append(RECORD_HEAD.pack(rid, rank, width, nbins, 0, 0) + w.astype("<i8").tobytes()
                       + r.astype("<i8").tobytes())
            names[rid] = name
    return out, names
