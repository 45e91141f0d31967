"""The HDF5 section of `sluice report`: the H5F and H5D records (files and
datasets; a dataset's record is named "<file>:<dataset path>"), as a short
table of the datasets that moved the most bytes."""

from __future__ import annotations

from rich import box
from rich.console import Console
from rich.table import Table

from sluice.report.model import Job
from sluice.report.tables import any_positive


def _shape(c) -> str:
    """The dataset's chunk shape, outermost dimension first ("contiguous" when none)."""
    dims = [int(c.get(f"H5D_CHUNK_SIZE_D{i}", 0)) for i in range(5, 0, -1)]
    dims = [d for d in dims if d > 0]
    return "x".join(str(d) for d in dims) if dims else "-"


def _selections(c) -> str:
    parts = [(int(c.get("H5D_REGULAR_HYPERSLAB_SELECTS", 0)), "regular"),
             (int(c.get("H5D_IRREGULAR_HYPERSLAB_SELECTS", 0)), "irregular"),
             (int(c.get("H5D_POINT_SELECTS", 0)), "points")]
    return ", ".join(f"{n:,} {what}" for n, what in parts if n) or "-"


def hdf5_rows(job: Job) -> tuple[int, list[dict]]:
    """The HDF5 files the job opened, and one row per dataset (app side),
    most bytes first."""
    from sluice.report.text import human_bytes

    files = sum(any_positive([f.app for f in job.files], ["H5F_OPENS"]))
    rows = []
    for f in job.datasets:
        c = f.app
        if not (c.get("H5D_OPENS", 0) or c.get("H5D_READS", 0) or c.get("H5D_WRITES", 0)):
            continue   # a PnetCDF variable (report/pnetcdf.py)
        nbytes = c.get("H5D_BYTES_READ", 0) + c.get("H5D_BYTES_WRITTEN", 0)
        rows.append({"dataset": f.path, "opens": int(c.get("H5D_OPENS", 0)), "reads": int(c.get("H5D_READS", 0)),
                     "writes": int(c.get("H5D_WRITES", 0)), "bytes": nbytes, "bytes_text": human_bytes(nbytes),
                     "selections": _selections(c), "chunks": _shape(c),
                     "dims": int(c.get("H5D_DATASPACE_NDIMS", 0)), "points": int(c.get("H5D_DATASPACE_NPOINTS", 0)),
                     "collective": bool(c.get("H5D_USE_MPIIO_COLLECTIVE", 0))})
    rows.sort(key=lambda r: (-r["bytes"], r["dataset"]))
    return files, rows


def print_rows(con: Console, title: str, columns: tuple[tuple[str, str], ...], rows: list[list[str]]) -> None:
    """A report table of datasets or variables: the first column (their
    names) folds, the others are cut."""
    t = Table(title=title, title_justify="left", box=box.SIMPLE_HEAD)
    for i, (col, just) in enumerate(columns):
        t.add_column(col, justify=just, overflow="fold" if i == 0 else "ellipsis")
    for r in rows:
        t.add_row(*r)
    con.print(t)


def hdf5_table(con: Console, job: Job, top: int) -> None:
    """Printed when the job opened HDF5 files or datasets."""
    files, rows = hdf5_rows(job)
    if not files and not rows:
        return
    print_rows(con, f"HDF5: {files:,} file{'s' if files != 1 else ''}, {len(rows):,} dataset"
                    f"{'s' if len(rows) != 1 else ''} (top {min(top, len(rows))} by bytes; H5D selections of the "
                    "file dataspace per read or write)",
               (("dataset", "left"), ("opens", "right"), ("reads", "right"), ("writes", "right"), ("bytes", "right"),
                ("selections", "left"), ("dims", "right"), ("points", "right"), ("chunks", "left")),
               [[r["dataset"], f"{r['opens']:,}", f"{r['reads']:,}", f"{r['writes']:,}", r["bytes_text"],
                 r["selections"] + (" (collective)" if r["collective"] else ""), str(r["dims"]), f"{r['points']:,}",
                 r["chunks"]] for r in rows[:top]])
