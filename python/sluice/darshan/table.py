"""Per-process, per-file tables of a sluice job for notebooks: one table per
module, a row per process, file and side (app, fs), Darshan's counter names
(as PyDarshan's record DataFrames have them), then the counters only sluice
has, prefixed SLUICE_."""

from __future__ import annotations

import csv
from pathlib import Path

from sluice.darshan import layout as L
from sluice.darshan.export import _shifted, assign_ranks
from sluice.darshan.mapping import DARSHAN_IDS, dropped, to_darshan
from sluice.darshan.recid import record_id
from sluice.errors import UserError
from sluice.logfmt import Log
from sluice.report.model import SIDES

KEYS = ["side", "rank", "pid", "host", "id", "file"]


def rows(job_id: str, logs: list[Log]) -> dict[int, tuple[list[str], list[list]]]:
    """module id -> (column names, rows)."""
    job = assign_ranks(job_id, logs)
    rank_of = dict(job.rank_of)
    start = min(l.start_ns for l in logs)
    found: dict[int, list[tuple[dict, dict[str, float], list, list]]] = {}
    for l in sorted(logs, key=lambda x: (rank_of.get(id(x), -1), x.start_ns, x.pid)):
        offset = (l.start_ns - start) / 1e9
        for r in l.records:
            mid = DARSHAN_IDS.get(r.module)
            if mid is None:
                continue
            for side in SIDES:
                c = _shifted(getattr(r, side), offset)
                ints, floats = to_darshan(mid, c)
                key = {"side": side, "rank": rank_of.get(id(l), -1), "pid": l.pid, "host": l.info.get("host", ""),
                       "id": record_id(r.path), "file": r.path}
                found.setdefault(mid, []).append((key, dropped(mid, c), ints, floats))
    out = {}
    for mid, items in found.items():
        extra = sorted({k for _, d, _, _ in items for k in d})
        cols = KEYS + L.INT_NAMES[mid] + L.FLOAT_NAMES[mid] + [f"SLUICE_{k}" for k in extra]
        out[mid] = (cols, [[key[k] for k in KEYS] + ints + floats + [d.get(k, 0) for k in extra]
                           for key, d, ints, floats in items])
    return out


def write_tables(job_id: str, logs: list[Log], out_dir: Path, fmt: str = "csv") -> list[Path]:
    written = []
    tables = rows(job_id, logs)
    if fmt == "parquet":
        try:
            import pyarrow as pa
            import pyarrow.parquet as pq
        except ImportError:
            raise UserError("--parquet needs pyarrow, which is not installed (--csv needs nothing)") from None
    for mid, (cols, data) in sorted(tables.items()):
        path = out_dir / f"{L.MODULE_NAMES[mid]}.{fmt}"
        if fmt == "parquet":
            # typed as Darshan's record: the id is a u64 hash, counters i64, fcounters f64
            types = {"rank": pa.int64(), "pid": pa.int64(), "id": pa.uint64(),
                     **{n: pa.int64() for n in L.INT_NAMES[mid]}, **{n: pa.float64() for n in L.FLOAT_NAMES[mid]}}
            pq.write_table(pa.table({c: pa.array([row[i] for row in data], type=types.get(c))
                                     for i, c in enumerate(cols)}), path)
        else:
            with open(path, "w", newline="", encoding="utf-8") as f:
                w = csv.writer(f)
                w.writerow(cols)
                w.writerows(data)
        written.append(path)
    return written
