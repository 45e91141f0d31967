"""``ckpt-burst``: a checkpoint burst. N processes each write a large file in
1 MiB writes at once, then compute. What the simulation loses is the time
each process is blocked in its checkpoint (open to close); under stage mode
the bytes then travel to the shared file system while the program goes on
(or, here, while it exits), and the drain runs at a fraction of the limit."""

from __future__ import annotations

from sluice.bench.workloads.base import Metric, Param, RunContext, Workload, fs_count, rate
from sluice.errors import UserError

MB = 1e6


class CkptBurst(Workload):
    name = "ckpt-burst"
    summary = "N processes each write one large checkpoint file in 1 MiB writes, then compute"
    variants = ("plain", "sluice-stage")
    native_programs = ("sluice-bench-ckpt-burst",)
    params = (
        Param("procs", 4, "processes writing at once"),
        Param("size", 256 << 20, "bytes each process writes", "size"),
        Param("write_size", 1 << 20, "bytes per write()", "size"),
    )
    metrics = (
        Metric("io_seconds", "s", "lower", help="the slowest process's time from open to close"),
        Metric("app_MBps", "MB/s", limit="write_MBps", help="bytes / io_seconds: the speed the program sees"),
        Metric("seconds", "s", "lower", help="start to the last process's exit (publishing included)"),
        Metric("drain_MBps", "MB/s", limit="write_MBps",
               help="stage: bytes / (exit - close): how fast the tier drained to the shared file system"),
        Metric("fs_writes", "calls", "lower", help="write calls that reached the file system"),
    )

    def run(self, ctx: RunContext) -> dict[str, float | None]:
        p = ctx.params
        argv = [ctx.native("sluice-bench-ckpt-burst"), "--dir", str(ctx.workdir / "ckpt"),
                "--procs", str(p["procs"]), "--size", str(p["size"]), "--write-size", str(p["write_size"])]
        r = ctx.exec(argv)
        want = p["procs"] * p["size"]
        if r["bytes_written"] != want or r["failed"]:
            raise UserError(f"ckpt-burst wrote {r['bytes_written']} bytes, expected {want}")
        drain = r["wall_seconds"] - r["io_seconds"] if ctx.variant.mode == "stage" else None
        return {
            "io_seconds": r["io_seconds"],
            "app_MBps": rate(want, r["io_seconds"], MB),
            "seconds": r["wall_seconds"],
            "drain_MBps": rate(want, drain, MB) if drain else None,
            "fs_writes": fs_count(r, "POSIX_WRITES", "writes"),
        }
