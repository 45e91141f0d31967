"""Bytes per process (rank) over time, as Darshan's heatmap module shows them.

What the logs allow: each record holds, per side, the bytes a process read
and wrote on one file and the first and last time it did so
(``*_F_READ_START_TIMESTAMP`` .. ``*_F_READ_END_TIMESTAMP``, the same for
writes), not when each call ran. A record's bytes are therefore spread
evenly over its first-to-last interval (all into one bin when the two are
equal): a process that wrote a file in two bursts at 1 s and 9 s shows as
writing it steadily from 1 s to 9 s. Darshan's heatmap module counts each
call into the bin it ran in; here the time resolution is a bin where a
record's first and last access are close, and its interval where they are
not. Totals are exact: a row adds up to the bytes its process moved.

The application side (what the program asked) of the POSIX and STDIO
modules is counted; MPI-IO's bytes are those POSIX calls again, so they are
left out, as are Darshan's shared (rank -1) records, which belong to no
single rank.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from sluice.logfmt import Records
from sluice.report.model import SHARED, Job

MODULES = ("POSIX", "STDIO")
KINDS = (("read", "BYTES_READ", "F_READ"), ("write", "BYTES_WRITTEN", "F_WRITE"))
DEFAULT_BINS = 100
MAX_ROWS = 128  # more processes than this are grouped, consecutive ranks per row


@dataclass
class Heatmap:
    rows: list[str]          # one label per row: "rank 3", "pid 1234", "ranks 0-7"
    edges: np.ndarray        # bins + 1 times, seconds since the job started
    read: np.ndarray         # [row, bin] bytes read
    write: np.ndarray        # [row, bin] bytes written

    @property
    def bin_seconds(self) -> float:
        return float(self.edges[1] - self.edges[0]) if len(self.edges) > 1 else 0.0

    def to_json(self) -> dict:
        return {"rows": self.rows, "edges_s": self.edges.tolist(), "read_bytes": self.read.tolist(),
                "write_bytes": self.write.tolist()}


def _spread(edges: np.ndarray, start: np.ndarray, end: np.ndarray, nbytes: np.ndarray) -> np.ndarray:
    """Bytes per bin of intervals [start, end] carrying nbytes each, spread evenly."""
    nb = len(edges) - 1
    out = np.zeros(nb)
    keep = nbytes > 0
    start, end, nbytes = start[keep], end[keep], nbytes[keep].astype(np.float64)
    if not len(nbytes):
        return out
    lo, hi = edges[0], edges[-1]
    start = np.clip(start, lo, hi)
    end = np.clip(np.maximum(end, start), lo, hi)
    width = (hi - lo) / nb
    point = end - start <= width * 1e-9
    if point.any():
        idx = np.clip(((start[point] - lo) / width).astype(np.int64), 0, nb - 1)
        np.add.at(out, idx, nbytes[point])
    s, e, b = start[~point], end[~point], nbytes[~point]
    if len(b):
        # the share of each interval that lies below each edge, times its bytes
        below = np.clip((edges[None, :] - s[:, None]) / (e - s)[:, None], 0.0, 1.0) * b[:, None]
        out += np.diff(below.sum(axis=0))
    return out


def _record_columns(log, names: list[str]) -> dict[str, np.ndarray]:
    """The app side of every POSIX and STDIO record of a log as one array per counter name."""
    cols: dict[str, list[np.ndarray]] = {n: [] for n in names}
    records = log.records
    if isinstance(records, Records):
        for block in records.blocks:
            m = block.module
            if m.name not in MODULES or not len(block):
                continue
            ints, floats = block.arrays()
            pos_i = {n: i for i, n in enumerate(m.int_names)}
            pos_f = {n: i for i, n in enumerate(m.float_names)}
            for n in names:
                full = f"{m.name}_{n}"
                if full in pos_i:
                    cols[n].append(ints[:, 0, pos_i[full]].astype(np.float64))
                elif full in pos_f:
                    cols[n].append(floats[:, 0, pos_f[full]])
                else:
                    cols[n].append(np.zeros(len(block)))
    else:
        for mod in MODULES:
            recs = [r for r in records if r.module == mod]
            if recs:
                for n in names:
                    cols[n].append(np.array([float(r.app.get(f"{mod}_{n}", 0)) for r in recs]))
    return {n: np.concatenate(v) if v else np.zeros(0) for n, v in cols.items()}


def _row_labels(logs) -> list[str]:
    ranked = all(l.rank >= 0 for l in logs) and len({l.rank for l in logs}) == len(logs)
    return [f"rank {l.rank}" if ranked else f"pid {l.pid}" for l in logs]


def heatmap(job: Job, bins: int = DEFAULT_BINS) -> Heatmap | None:
    """Bytes read and written per process and time bin; None when the job
    moved no bytes through POSIX or STDIO."""
    logs = [l for l in job.logs if SHARED not in l.info]
    ranked = all(l.rank >= 0 for l in logs)
    logs.sort(key=lambda l: (l.rank, l.start_ns, l.pid) if ranked else (l.start_ns, l.pid))
    span = max(job.runtime, 1e-9)
    names = [b for _, b, _ in KINDS] + [f"{t}_{e}_TIMESTAMP" for _, _, t in KINDS for e in ("START", "END")]
    # each log's intervals, in seconds since the job started
    per_log = []
    for l in logs:
        c = _record_columns(l, names)
        shift = (l.start_ns - job.start_ns) / 1e9
        per_log.append((c, shift))
        for _, _, t in KINDS:
            ends = c[f"{t}_END_TIMESTAMP"]
            if len(ends):
                span = max(span, float(ends.max()) + shift)
    edges = np.linspace(0.0, span, bins + 1)
    read = np.zeros((len(logs), bins))
    write = np.zeros((len(logs), bins))
    for i, (c, shift) in enumerate(per_log):
        for (kind, nbytes, t), out in zip(KINDS, (read, write)):
            b = c[nbytes]
            if len(b) and b.max() > 0:
                out[i] = _spread(edges, c[f"{t}_START_TIMESTAMP"] + shift, c[f"{t}_END_TIMESTAMP"] + shift, b)
    if not read.any() and not write.any():
        return None
    rows = _row_labels(logs)
    if len(rows) > MAX_ROWS:
        per = -(-len(rows) // MAX_ROWS)
        groups = range(0, len(rows), per)
        read = np.add.reduceat(read, list(groups), axis=0)
        write = np.add.reduceat(write, list(groups), axis=0)
        first = [r.split()[-1] for r in rows]
        rows = [f"{'ranks' if ranked else 'pids'} {first[g]}-{first[min(g + per, len(first)) - 1]}" for g in groups]
    return Heatmap(rows, edges, read, write)


__all__ = ["Heatmap", "heatmap", "DEFAULT_BINS"]
