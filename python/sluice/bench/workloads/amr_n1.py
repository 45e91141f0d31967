"""``amr-n1``: an AMR checkpoint, N processes writing ~1 MiB boxes at
scattered offsets of one shared file with independent pwrite (Chombo /
BISICLES). A POSIX placeholder for the MPI-IO/HDF5 version that comes with
sluice's MPI aggregation library."""

from __future__ import annotations

from sluice.bench.workloads.base import Metric, Param, RunContext, Workload, rate
from sluice.bench.workloads.smallio import WALL
from sluice.errors import UserError

MB = 1e6


class AmrN1(Workload):
    name = "amr-n1"
    summary = "N processes writing ~1 MiB boxes at scattered offsets of one shared file (POSIX placeholder)"
    reads = False
    native_programs = ("sluice-bench-amr-n1",)
    params = (
        Param("procs", 4, "writer processes"),
        Param("boxes", 64, "boxes per process"),
        Param("box_size", 1 << 20, "mean box size", "size"),
        Param("jitter", 25, "box sizes vary by +- this many percent"),
        Param("fsync", True, "each process fsyncs before closing", "bool"),
    )
    metrics = (
        Metric("seconds", "s", "lower", help="create of the file to the last close"),
        Metric("write_MBps", "MB/s", limit="write_MBps"),
        Metric("writes_per_s", "ops/s"),
        WALL,
    )

    def run(self, ctx: RunContext) -> dict[str, float | None]:
        p = ctx.params
        r = ctx.exec([
            ctx.native("sluice-bench-amr-n1"), "--file", str(ctx.workdir / "checkpoint.dat"),
            "--procs", str(p["procs"]), "--boxes", str(p["boxes"]),
            "--box-size", str(p["box_size"]), "--jitter", str(p["jitter"]),
            "--seed", str(ctx.seed), *([] if p["fsync"] else ["--no-fsync"]),
        ])  # fmt: skip
        if r["bytes_written"] != r["file_bytes"]:
            raise UserError(f"amr-n1 wrote {r['bytes_written']} bytes into a {r['file_bytes']}-byte layout")
        return {
            "seconds": r["seconds"],
            "write_MBps": rate(r["bytes_written"], r["seconds"], MB),
            "writes_per_s": rate(r["writes"], r["seconds"]),
            "wall_seconds": ctx.wall_seconds,
        }
