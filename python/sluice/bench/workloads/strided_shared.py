"""``strided-shared``: N processes writing interleaved small pieces of one
shared file with POSIX pwrite (process r writes pieces r, r+N, r+2N, ...),
the N-to-1 strided pattern of a code without MPI-IO."""

from __future__ import annotations

from sluice.bench.workloads.base import Metric, Param, RunContext, Workload, fs_count, rate
from sluice.bench.workloads.smallio import WALL
from sluice.errors import UserError

MB = 1e6


class StridedShared(Workload):
    name = "strided-shared"
    summary = "N processes writing interleaved 4 KiB pieces of one shared file with pwrite"
    reads = False
    variants = ("plain", "sluice-buffer")
    native_programs = ("sluice-bench-strided-shared",)
    params = (
        Param("procs", 4, "writer processes"),
        Param("piece", 4 << 10, "bytes per piece, one pwrite() each", "size"),
        Param("size", 64 << 20, "file size", "size"),
        Param("fsync", False, "each process fsyncs before closing", "bool"),
    )
    metrics = (
        Metric("write_MBps", "MB/s", limit="write_MBps", help="file bytes / (create to the last exit)"),
        Metric("fs_writes", "calls", "lower", help="write calls that reached the file system"),
        Metric("seconds", "s", "lower", help="create to the last process's exit"),
        Metric("slowest_proc_seconds", "s", "lower", help="the slowest process's open to close"),
        WALL,
    )

    def run(self, ctx: RunContext) -> dict[str, float | None]:
        p = ctx.params
        argv = [ctx.native("sluice-bench-strided-shared"), "--file", str(ctx.workdir / "shared.dat"),
                "--procs", str(p["procs"]), "--piece", str(p["piece"]), "--size", str(p["size"])]
        r = ctx.exec([*argv, "--phase", "run", *(["--fsync"] if p["fsync"] else [])])
        v = ctx.exec([*argv, "--phase", "verify"], as_variant=False, timed=False)
        pieces = -(-p["size"] // p["piece"])
        if r["bytes_written"] != p["size"] or r["writes"] != pieces or v["file_bytes"] != p["size"]:
            raise UserError(f"strided-shared wrote {r['bytes_written']} bytes in {r['writes']} pieces into a "
                            f"{v['file_bytes']}-byte file; expected {p['size']} in {pieces}")
        return {
            "write_MBps": rate(p["size"], r["seconds"], MB),
            "fs_writes": fs_count(r, "POSIX_WRITES", "writes"),
            "seconds": r["seconds"],
            "slowest_proc_seconds": r["slowest_proc_seconds"],
            "wall_seconds": ctx.wall_seconds,
        }
