"""``fpp-netcdf``: one output step of a climate model writing one netCDF file
per process through the netCDF C library (FMS on Lustre)."""

from __future__ import annotations

from sluice.bench.workloads.base import Metric, Param, RunContext, Workload, rate
from sluice.bench.workloads.smallio import WALL

MB = 1e6


class FppNetcdf(Workload):
    name = "fpp-netcdf"
    summary = "N processes each writing one netCDF file of a few 4-D fields (file per process)"
    reads = False
    native_programs = ("sluice-bench-fpp-netcdf",)
    params = (
        Param("procs", 8, "processes, one file each"),
        Param("nx", 96, "longitudes per process"),
        Param("ny", 96, "latitudes per process"),
        Param("nz", 5, "vertical levels"),
        Param("vars", 4, "float fields per file"),
        Param("steps", 4, "time records"),
        Param("format", "64bit", "netCDF file format", "choice", ("classic", "64bit", "netcdf4")),
    )
    metrics = (
        Metric("seconds", "s", "lower", help="all processes, create to close"),
        Metric("write_MBps", "MB/s", limit="write_MBps", help="file bytes per second"),
        Metric("files_per_s", "ops/s", help="files written per second"),
        WALL,
    )

    def run(self, ctx: RunContext) -> dict[str, float | None]:
        p = ctx.params
        r = ctx.exec([
            ctx.native("sluice-bench-fpp-netcdf"), "--dir", str(ctx.workdir / "fpp"),
            "--procs", str(p["procs"]), "--nx", str(p["nx"]), "--ny", str(p["ny"]),
            "--nz", str(p["nz"]), "--vars", str(p["vars"]), "--steps", str(p["steps"]),
            "--format", p["format"],
        ])  # fmt: skip
        return {
            "seconds": r["seconds"],
            "write_MBps": rate(r["file_bytes"], r["seconds"], MB),
            "files_per_s": rate(r["files"], r["seconds"]),
            "wall_seconds": ctx.wall_seconds,
        }
