"""``nc-append``: small records appended one at a time to a netCDF-4 file
(HDF5 underneath), as FMS diagnostics and Agro-IBIS history files are
written: an unlimited ``time`` dimension, a few 2-D fields per record."""

from __future__ import annotations

from sluice.bench.workloads.base import Metric, Param, RunContext, Workload, fs_count, rate
from sluice.bench.workloads.log_counts import app_count, fs_over_app
from sluice.bench.workloads.randread import FS_BYTES_RATIO
from sluice.bench.workloads.smallio import WALL
from sluice.errors import UserError

MB = 1e6


class NcAppend(Workload):
    name = "nc-append"
    summary = "netCDF-4 small-record append: records of a few 2-D fields added one at a time"
    reads = False
    variants = ("plain", "sluice-buffer")
    native_programs = ("sluice-bench-nc-append",)
    params = (
        Param("records", 500, "records appended along the unlimited time dimension"),
        Param("nx", 64, "x size of each 2-D field"),
        Param("ny", 64, "y size of each 2-D field"),
        Param("vars", 2, "2-D float fields per record (besides the time coordinate)"),
        Param("sync_every", 0, "nc_sync after every N records (0: never)"),
        Param("format", "netcdf4", "netCDF file format", "choice", ("netcdf4", "64bit", "classic")),
    )
    metrics = (
        Metric("write_MBps", "MB/s", limit="write_MBps", help="data bytes / (create to close)"),
        Metric("fs_writes", "calls", "lower",
               help="write calls that reached the file system (plain: the process's write syscalls)"),
        Metric("write_reduction", "x", help="write calls the program made per write call that reached the file system"),
        Metric("fs_reads", "calls", "lower",
               help="read calls that reached the file system (netCDF's classic formats read before they write)"),
        FS_BYTES_RATIO,
        Metric("seconds", "s", "lower", help="create, define, appends, close"),
        WALL,
    )

    def run(self, ctx: RunContext) -> dict[str, float | None]:
        p = ctx.params
        argv = [
            ctx.native("sluice-bench-nc-append"), "--file", str(ctx.workdir / "history.nc"),
            "--records", str(p["records"]), "--nx", str(p["nx"]), "--ny", str(p["ny"]),
            "--vars", str(p["vars"]), "--sync-every", str(p["sync_every"]), "--format", p["format"],
        ]  # fmt: skip
        w = ctx.exec([*argv, "--phase", "write"])
        v = ctx.exec([*argv, "--phase", "verify"], as_variant=False, timed=False)
        want = p["records"] * (p["vars"] * p["nx"] * p["ny"] * 4 + 8)
        if w["data_bytes"] != want or v["data_bytes"] != want or v["records_found"] != p["records"]:
            raise UserError(f"nc-append put {w['data_bytes']} bytes and read back {v['data_bytes']} "
                            f"in {v['records_found']} records, expected {want} in {p['records']}")
        if w["file_bytes"] < want or v["file_bytes"] != w["file_bytes"]:
            raise UserError(f"nc-append: the file has {v['file_bytes']} bytes, for {want} bytes of data")
        # A plain run counts its own calls from /proc/self/io (the library makes them).
        known = "sluice_counters" in w or w["proc_io"]
        fs_writes = fs_count(w, "POSIX_WRITES", "write_syscalls") if known else None
        app_writes = app_count(w, "POSIX_WRITES", "write_syscalls") if known else None
        return {
            "write_MBps": rate(w["data_bytes"], w["seconds"], MB),
            "fs_writes": fs_writes,
            "write_reduction": app_writes / fs_writes if fs_writes else None,
            "fs_reads": fs_count(w, "POSIX_READS", "read_syscalls") if known else None,
            "fs_read_bytes_ratio": fs_over_app(w, "POSIX_BYTES_READ", "read_bytes") if known else None,
            "seconds": w["seconds"],
            "wall_seconds": ctx.wall_seconds,
        }
