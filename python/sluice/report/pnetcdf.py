"""The PnetCDF section of `sluice report`: the PNETCDF_FILE and PNETCDF_VAR
records (files and variables; a variable's record is named "<file>:<name>"),
as a short table of the variables that moved the most bytes."""

from __future__ import annotations

from rich.console import Console

from sluice.report.hdf5 import print_rows
from sluice.report.model import Job
from sluice.report.tables import any_positive

KINDS = ("VAR", "VAR1", "VARA", "VARS", "VARM", "VARN", "VARD")


def _calls(c, families: tuple[str, ...]) -> str:
    """'12 vara, 1 varn': the API kinds of a variable's calls, most first."""
    counts = {k.lower(): sum(int(c.get(f"PNETCDF_VAR_{fam}_{k}", 0)) for fam in families) for k in KINDS}
    return ", ".join(f"{n:,} {k}" for k, n in sorted(counts.items(), key=lambda x: -x[1]) if n) or "-"


def pnetcdf_rows(job: Job) -> tuple[int, list[dict]]:
    """The PnetCDF files the job opened, and one row per variable (app side), most bytes first."""
    from sluice.report.text import human_bytes

    files = sum(any_positive([f.app for f in job.files], ["PNETCDF_FILE_OPENS", "PNETCDF_FILE_CREATES"]))
    rows = []
    for f in job.datasets:
        c = f.app
        if not c.get("PNETCDF_VAR_OPENS", 0) and not c.get("PNETCDF_VAR_BYTES_READ", 0) \
                and not c.get("PNETCDF_VAR_BYTES_WRITTEN", 0):
            continue
        nbytes = c.get("PNETCDF_VAR_BYTES_READ", 0) + c.get("PNETCDF_VAR_BYTES_WRITTEN", 0)
        rows.append({"variable": f.path, "opens": int(c.get("PNETCDF_VAR_OPENS", 0)),
                     "independent": int(c.get("PNETCDF_VAR_INDEP_READS", 0) + c.get("PNETCDF_VAR_INDEP_WRITES", 0)),
                     "collective": int(c.get("PNETCDF_VAR_COLL_READS", 0) + c.get("PNETCDF_VAR_COLL_WRITES", 0)),
                     "nonblocking": int(c.get("PNETCDF_VAR_NB_READS", 0) + c.get("PNETCDF_VAR_NB_WRITES", 0)),
                     "bytes": nbytes, "bytes_text": human_bytes(nbytes),
                     "calls": _calls(c, ("PUT", "GET", "IPUT", "IGET", "BPUT")),
                     "dims": int(c.get("PNETCDF_VAR_NDIMS", 0)), "record": bool(c.get("PNETCDF_VAR_IS_RECORD_VAR", 0))})
    rows.sort(key=lambda r: (-r["bytes"], r["variable"]))
    return files, rows


def pnetcdf_table(con: Console, job: Job, top: int) -> None:
    """Printed when the job opened PnetCDF files or variables."""
    files, rows = pnetcdf_rows(job)
    if not files and not rows:
        return
    print_rows(con, f"PnetCDF: {files:,} file{'s' if files != 1 else ''}, {len(rows):,} variable"
                    f"{'s' if len(rows) != 1 else ''} (top {min(top, len(rows))} by bytes; calls per API kind)",
               (("variable", "left"), ("opens", "right"), ("independent", "right"), ("collective", "right"),
                ("non-blocking", "right"), ("bytes", "right"), ("calls", "left"), ("dims", "right")),
               [[r["variable"], f"{r['opens']:,}", f"{r['independent']:,}", f"{r['collective']:,}",
                 f"{r['nonblocking']:,}", r["bytes_text"], r["calls"], f"{r['dims']}" + (" (record)" if r["record"] else "")]
                for r in rows[:top]])
